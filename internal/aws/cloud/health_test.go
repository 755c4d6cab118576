package cloud_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/secureai-gateway/gateway/internal/bench/cloudbench"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
	"github.com/tidwall/gjson"
)

// withTables creates the tables of t (beside the fixture's keys table) and names them in the
// function's environment as template.yaml does.
func withTables(t *testing.T, tables dynamostore.Tables) {
	t.Helper()
	tables.APIKeys = os.Getenv("SECUREAI_TABLE_API_KEYS")
	if err := dynamostore.CreateTables(context.Background(), dynamodb.NewFromConfig(testenv.AWSConfig(t, testenv.Moto(t))), tables); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"SECUREAI_TABLE_PROVIDER_HEALTH": tables.ProviderHealth, "SECUREAI_TABLE_LIMITS": tables.Limits,
		"SECUREAI_TABLE_USERS": tables.Users, "SECUREAI_TABLE_CIRCUIT_BREAKERS": tables.CircuitBreakers} {
		t.Setenv(name, v)
	}
}

// failoverReport is the secureai.failover.attempts of a streamed answer, as "model status reason".
func failoverReport(t *testing.T, out string) []string {
	t.Helper()
	for line := range strings.Lines(out) {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok || !gjson.Get(data, "secureai.failover").Exists() {
			continue
		}
		var got []string
		for _, a := range gjson.Get(data, "secureai.failover.attempts").Array() {
			got = append(got, strings.TrimSpace(a.Get("model").Str+" "+a.Get("status").Str+" "+a.Get("reason").Str))
		}
		return got
	}
	t.Fatalf("no failover report in the stream:\n%s", out)
	return nil
}

// Two instances of the chat function — each its own Cloud, Health and cache, as two Lambda
// environments are — on one provider health table: the first pays the first-token timeout of a
// model that never answers three times and opens its cool-down; its reports are in the table as
// its invocations end (nothing is left to run after the response). The second, on its very first
// request, passes over that model without waiting out the timeout itself.
func TestASecondInstanceSkipsTheModelTheFirstSawFail(t *testing.T) {
	fx := newFixture(t)
	t.Setenv("SECUREAI_DEMO", "true")
	health := testenv.UniqueName(t, "health")
	withTables(t, dynamostore.Tables{ProviderHealth: health})
	first, _ := load(t)
	second, _ := load(t)
	if first.Health == nil || first.Health.Env() == second.Health.Env() {
		t.Fatal("each instance needs its own shared health, under its own name")
	}
	const timeout = time.Second
	body := fmt.Sprintf(`{"model":"demo/hang","fallback_models":["demo/ok"],"stream":true,`+
		`"redundancy":{"skip_unhealthy":true,"first_token_timeout_ms":%d},"messages":[{"role":"user","content":"Hello"}]}`, timeout.Milliseconds())

	h := openAIChat(first)
	for i := range 3 {
		out, took := invokeStream(t, h, fx.secret, body, 20*time.Second)
		if got := failoverReport(t, out); !slices.Equal(got, []string{"demo/hang failed timeout", "demo/ok served"}) || took < timeout {
			t.Fatalf("first instance, request %d: %v in %v", i, got, took)
		}
	}
	store := dynamostore.New(dynamodb.NewFromConfig(testenv.AWSConfig(t, testenv.Moto(t))), dynamostore.Tables{ProviderHealth: health})
	stored, err := store.Health(context.Background(), []string{"demo/hang"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if rs := stored["demo/hang"]; len(rs) != 1 || rs[0].Env != first.Health.Env() || rs[0].Fails != 3 || !rs[0].Until.After(time.Now()) {
		t.Fatalf("the table holds %+v when the first instance's invocations have ended, want its report of 3 failures and an open cool-down", rs)
	}

	out, took := invokeStream(t, openAIChat(second), fx.secret, body, 20*time.Second)
	if got := failoverReport(t, out); !slices.Equal(got, []string{"demo/hang skipped " + string(chain.Unhealthy), "demo/ok served"}) {
		t.Errorf("second instance: %v", got)
	}
	if took >= timeout {
		t.Errorf("the second instance's first request took %v: it waited out the timeout the first had already seen", took)
	}
}

// Sharing health adds no round trip to a request's path: with every AWS call held 80 ms (the
// cloud benchmark's delay proxy), the reads and writes of the health table always run beside
// another call of the same request — a cold request's read beside its breakers' read and its
// admission, a failure's report beside the attempt after it and the settlement — so the
// request's sequential DynamoDB rounds are the same with and without them.
func TestSharedHealthAddsNoRoundTrip(t *testing.T) {
	fx := newFixture(t)
	t.Setenv("SECUREAI_DEMO", "true")
	tables := dynamostore.Tables{ProviderHealth: testenv.UniqueName(t, "health"), Limits: testenv.UniqueName(t, "limits"),
		Users: testenv.UniqueName(t, "users"), CircuitBreakers: testenv.UniqueName(t, "breakers")}
	withTables(t, tables)
	proxy, err := cloudbench.StartDelayProxy(testenv.Moto(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	t.Setenv("AWS_ENDPOINT_URL", proxy.URL)
	c, _ := load(t)
	h := openAIChat(c)
	body := `{"model":"demo/error-500","fallback_models":["demo/ok"],"stream":true,"redundancy":{"skip_unhealthy":true},"messages":[{"role":"user","content":"Hello"}]}`

	proxy.SetDelay(80 * time.Millisecond)
	for _, request := range []string{"cold", "warm"} {
		proxy.Take()
		out, _ := invokeStream(t, h, fx.secret, body, 20*time.Second)
		if got := failoverReport(t, out); !slices.Equal(got, []string{"demo/error-500 failed server_error", "demo/ok served"}) {
			t.Fatalf("%s request: %v", request, got)
		}
		calls := cloudbench.OnlyDynamoDB(proxy.Take())
		others := slices.DeleteFunc(slices.Clone(calls), func(s cloudbench.Span) bool { return s.Detail == tables.ProviderHealth })
		var health []string
		for _, s := range calls {
			if s.Detail == tables.ProviderHealth {
				health = append(health, strings.TrimPrefix(s.Op, "DynamoDB_20120810."))
			}
		}
		wantHealth := []string{"PutItem"} // this failure's report
		if request == "cold" {
			wantHealth = []string{"Query", "PutItem"} // and the others' reports, never read yet
		}
		if !slices.Equal(health, wantHealth) {
			t.Errorf("%s request: health table calls %v, want %v", request, health, wantHealth)
		}
		if with, without := cloudbench.Rounds(calls), cloudbench.Rounds(others); with != without {
			t.Errorf("%s request: %d sequential DynamoDB rounds, %d without the health table's calls:\n%s", request, with, without, spans(calls))
		}
	}
}

func spans(ss []cloudbench.Span) string {
	var b strings.Builder
	if len(ss) == 0 {
		return ""
	}
	t0 := ss[0].Arrive
	for _, s := range ss {
		fmt.Fprintf(&b, "  %-40s %-40s %6s → %6s\n", s.Op, s.Detail, s.Arrive.Sub(t0).Round(time.Millisecond), s.Answer.Sub(t0).Round(time.Millisecond))
	}
	return b.String()
}
