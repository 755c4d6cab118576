package cloud_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/secureai-gateway/gateway/internal/aws/awslambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/endpoint/openaichat"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/metrics"
	"github.com/secureai-gateway/gateway/internal/provider/adapters"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/secureai-gateway/gateway/internal/testkit/childproc"
)

// slowSender hands events over after delay, like an EventBridge PutEvents that takes its time.
type slowSender struct {
	delay time.Duration
	mu    sync.Mutex
	sent  []event.Type
}

func (s *slowSender) Send(_ context.Context, evs []event.Event) error {
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range evs {
		s.sent = append(s.sent, e.Type)
	}
	return nil
}

func (s *slowSender) types() []event.Type {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]event.Type(nil), s.sent...)
}

// openAIChat is the openai-chat function's handler as its main.go builds it.
func openAIChat(c *cloud.Cloud) http.Handler {
	return c.Endpoint(openaichat.Endpoint, adapters.Factories())
}

// invokeStream runs one streaming invocation as the Lambda runtime does: the handler returns at
// the first byte, and the invocation ends when the body has been read to its end.
func invokeStream(t *testing.T, h http.Handler, secret, body string, budget time.Duration) (string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	start := time.Now()
	resp, err := awslambda.Streaming(h)(ctx, events.APIGatewayProxyRequest{
		HTTPMethod: "POST", Path: "/v1/chat/completions", Resource: "/v1/chat/completions", Body: body,
		Headers:           map[string]string{"Authorization": "Bearer " + secret, "Content-Type": "application/json"},
		MultiValueHeaders: map[string][]string{"Authorization": {"Bearer " + secret}, "Content-Type": {"application/json"}},
	})
	if err != nil {
		t.Fatalf("invocation failed: %v", err)
	}
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	return string(out), time.Since(start)
}

// A Lambda invocation ends when its response stream does, and a frozen function would lose the
// events it had not handed over: an api:model_failover published during a failover reaches the
// bus before the stream ends, even when the send is slow and the answer is ready long before.
func TestEventsPublishedBeforeTheStreamEnds(t *testing.T) {
	fx := newFixture(t)
	t.Setenv("SECUREAI_DEMO", "true")
	c, _ := load(t)
	sender := &slowSender{delay: 300 * time.Millisecond}
	c.Events = event.NewAsync(sender, slog.New(slog.DiscardHandler))

	out, _ := invokeStream(t, openAIChat(c), fx.secret,
		`{"model":"demo/error-500","fallback_models":["demo/ok"],"stream":true,"messages":[{"role":"user","content":"Hello"}]}`, 10*time.Second)
	if !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Fatalf("the stream did not end cleanly:\n%s", out)
	}
	if got := sender.types(); len(got) != 1 || got[0] != event.ModelFailover {
		t.Errorf("events handed over when the stream ended: %v, want the one %s", got, event.ModelFailover)
	}
}

// A chat function writes one EMF record for a request, to its log: a failover streamed by the
// demo provider is counted by its surface, outcome, serving model and first failover.
func TestAChatRequestWritesOneMetricsRecord(t *testing.T) {
	fx := newFixture(t)
	t.Setenv("SECUREAI_DEMO", "true")
	c, _ := load(t)
	var log childproc.SyncBuffer
	c.Metrics = metrics.NewEMF(&log)

	out, _ := invokeStream(t, openAIChat(c), fx.secret,
		`{"model":"demo/error-500","fallback_models":["demo/ok"],"stream":true,"messages":[{"role":"user","content":"Hello"}]}`, 10*time.Second)
	if !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Fatalf("the stream did not end cleanly:\n%s", out)
	}
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d records, want one:\n%s", len(lines), log.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	aws, _ := rec["_aws"].(map[string]any)
	directives, _ := aws["CloudWatchMetrics"].([]any)
	if len(directives) != 3 || directives[0].(map[string]any)["Namespace"] != metrics.Namespace {
		t.Errorf("directives %v", aws)
	}
	for k, want := range map[string]any{"Surface": "openai", "Outcome": "ok", "Model": "demo/ok", "FailedModel": "demo/error-500",
		"NextModel": "demo/ok", "Reason": "server_error", "Requests": 1.0, "Attempts": 2.0, "Failovers": 1.0} {
		if rec[k] != want {
			t.Errorf("%s = %v, want %v in %s", k, rec[k], want, lines[0])
		}
	}
	if strings.Contains(lines[0], fx.secret) {
		t.Errorf("the record holds the key: %s", lines[0])
	}
}

// A stream still running at the invocation's deadline ends the reserve before it with an error
// frame saying the deadline was reached, and no [DONE], instead of being killed mid-stream.
func TestStreamEndsBeforeTheInvocationDeadline(t *testing.T) {
	fx := newFixture(t)
	upstream := httptest.NewServer(openaifake.New(time.Minute))
	t.Cleanup(upstream.Close)
	overlay := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(overlay, []byte(`{"providers":{"fake":{"type":"openai","base_url":"`+upstream.URL+`/v1"}},
		"models":{"fake/stall":{"upstream":"stall","regions":["us"],"pricing":{"input_per_1m":0,"output_per_1m":0},"points":1,"context_window":8192}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SECUREAI_CONFIG", overlay)
	c, _ := load(t)

	const budget = 3 * time.Second
	out, took := invokeStream(t, openAIChat(c), fx.secret,
		`{"model":"fake/stall","stream":true,"messages":[{"role":"user","content":"Hello"}]}`, budget)
	if took >= budget {
		t.Fatalf("the stream ended after %v, past the %v invocation deadline", took, budget)
	}
	if strings.Contains(out, "[DONE]") {
		t.Errorf("a stream cut at the deadline ends with [DONE]:\n%s", out)
	}
	frames := strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n")
	var last struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(frames[len(frames)-1], "data: ")), &last); err != nil || last.Error.Code != "deadline_exceeded" {
		t.Errorf("last frame %q (%v), want an error frame with code deadline_exceeded", frames[len(frames)-1], err)
	}
	if len(frames) < 3 {
		t.Errorf("the tokens sent before the stall are missing:\n%s", out)
	}
}

// The function reads a catalog overlay (SECUREAI_CONFIG) whose model is served by two
// deployments: the first one's 500 fails over to the second, and the report names both.
func TestAFunctionServesAModelFromItsDeployments(t *testing.T) {
	fx := newFixture(t)
	upstream := httptest.NewServer(openaifake.New(time.Minute))
	t.Cleanup(upstream.Close)
	overlay := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(overlay, []byte(`{"providers":{
			"east":{"type":"openai","base_url":"`+upstream.URL+`/v1"},"west":{"type":"openai","base_url":"`+upstream.URL+`/v1"}},
		"models":{"fake/deployed":{"pricing":{"input_per_1m":0,"output_per_1m":0},"points":1,"context_window":8192,"deployments":[
			{"provider":"east","upstream":"error-500","region":"us-east-1"},
			{"provider":"west","upstream":"ok","region":"us-west-2","pricing":{"input_per_1m":1,"output_per_1m":2}}]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SECUREAI_CONFIG", overlay)
	c, _ := load(t)
	out, _ := invokeStream(t, openAIChat(c), fx.secret, `{"model":"fake/deployed","messages":[{"role":"user","content":"Hello"}]}`, 20*time.Second)
	var got struct {
		Secureai struct {
			ServedModel string `json:"served_model"`
			Failover    struct {
				Attempts []struct{ Model, Provider, Status string }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	a := got.Secureai.Failover.Attempts
	if got.Secureai.ServedModel != "fake/deployed" || len(a) != 2 || a[0].Provider != "east" || a[0].Status != "failed" ||
		a[1].Provider != "west" || a[1].Status != "served" || a[0].Model != "fake/deployed" || a[1].Model != "fake/deployed" {
		t.Errorf("the function's answer: %s", out)
	}
}

// A stream still waiting for its first content token after KeepAlive is committed and sent SSE
// comments (API Gateway ends a streamed response idle for 5 minutes): the answer then follows
// as usual; a chain that fails after the stream was committed ends it with an error frame.
func TestAWaitingStreamIsKeptAlive(t *testing.T) {
	fx := newFixture(t)
	upstream := httptest.NewServer(openaifake.New(time.Minute))
	t.Cleanup(upstream.Close)
	overlay := filepath.Join(t.TempDir(), "catalog.json")
	model := func(name, up string) string {
		return `"fake/` + name + `":{"upstream":"` + up + `","regions":["us"],"pricing":{"input_per_1m":0,"output_per_1m":0},"points":1,"context_window":8192}`
	}
	if err := os.WriteFile(overlay, []byte(`{"providers":{"fake":{"type":"openai","base_url":"`+upstream.URL+`/v1"}},
		"models":{`+model("slow", "slow-first-token-700")+`,`+model("hang", "hang")+`}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SECUREAI_CONFIG", overlay)
	c, _ := load(t)
	c.KeepAlive = 200 * time.Millisecond
	h := openAIChat(c)
	const comment = ": waiting for the first token\n\n"

	out, _ := invokeStream(t, h, fx.secret, `{"model":"fake/slow","stream":true,"redundancy":{"first_token_timeout_ms":5000},"messages":[{"role":"user","content":"Hello"}]}`, 20*time.Second)
	if !strings.HasPrefix(out, comment+comment) || !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Errorf("a stream waiting 700 ms with keep-alives every 200 ms:\n%s", out)
	}

	out, _ = invokeStream(t, h, fx.secret, `{"model":"fake/hang","stream":true,"redundancy":{"first_token_timeout_ms":600},"messages":[{"role":"user","content":"Hello"}]}`, 20*time.Second)
	frames := strings.Split(strings.TrimSuffix(strings.ReplaceAll(out, comment, ""), "\n\n"), "\n\n")
	var last struct{ Error struct{ Code, Type string } }
	if !strings.HasPrefix(out, comment) || len(frames) != 1 || json.Unmarshal([]byte(strings.TrimPrefix(frames[0], "data: ")), &last) != nil ||
		last.Error.Code == "" || strings.Contains(out, "[DONE]") {
		t.Errorf("a chain failing after keep-alives, want comments then one error frame and no [DONE]:\n%s", out)
	}
}
