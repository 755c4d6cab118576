package emit_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/emit"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/limits"
)

type recorder struct{ got []event.Event }

func (r *recorder) Publish(_ context.Context, evs ...event.Event) { r.got = append(r.got, evs...) }
func (r *recorder) Flush(context.Context) error                   { return nil }

func TestEachTransitionIsOneFailoverEventNamingTheCaller(t *testing.T) {
	rec := &recorder{}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	obs := emit.Observer{Publisher: rec, Now: func() time.Time { return now }}
	key := &apikey.Key{ID: "key_1", UserID: "user_1"}
	ctx := identity.WithRequestID(identity.WithKey(context.Background(), key), "req_1")
	obs.FailedOver(ctx, completion.Failover{RequestID: "req_1", Key: key,
		Transition: chain.Transition{Failed: "openai/a", Reason: chain.ConnectionError, Next: "google/b", Latency: 1500 * time.Millisecond}})
	if len(rec.got) != 1 || rec.got[0].Type != event.ModelFailover {
		t.Fatalf("published %v", rec.got)
	}
	var d event.Failover
	if err := json.Unmarshal(rec.got[0].Data, &d); err != nil {
		t.Fatal(err)
	}
	want := event.Failover{FailedModel: "openai/a", Reason: "connection_error", NextModel: "google/b", LatencyMs: 1500,
		Subject: event.Subject{UserID: "user_1", APIKeyID: "key_1", RequestID: "req_1"}, Time: now}
	if d != want {
		t.Errorf("data = %+v, want %+v", d, want)
	}
}

func TestALimitRefusalIsOneLimitReachedEvent(t *testing.T) {
	rec := &recorder{}
	now := time.Date(2026, 12, 1, 0, 0, 30, 0, time.UTC)
	obs := emit.Observer{Publisher: rec, Now: func() time.Time { return now }}
	key := &apikey.Key{ID: "key_1", UserID: "user_1"}
	ctx := identity.WithRequestID(identity.WithKey(context.Background(), key), "req_1")
	reset := now.Add(30 * time.Second)
	refusal := fault.New(fault.RateLimited, "Rate limit exceeded", "too many").Wrap(&limits.Exceeded{Period: limits.Minute, Limit: 60, ResetTime: reset})
	obs.Finished(ctx, completion.Outcome{Surface: "openai", Err: refusal, Kind: fault.RateLimited})
	obs.Finished(ctx, completion.Outcome{Surface: "openai", Err: errors.New("chain exhausted"), Kind: fault.ChainRateLimited})
	if len(rec.got) != 2 || rec.got[0].Type != event.LimitReached || rec.got[1].Type != event.ChainExhausted {
		t.Fatalf("published %v, want one api:limit_reached, then api:chain_exhausted (a provider's 429 is not the key's limit)", rec.got)
	}
	var d event.Limit
	if err := json.Unmarshal(rec.got[0].Data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Limit != "requests_per_minute" || d.Max != 60 || !d.ResetTime.Equal(reset) || d.Endpoint != "/v1/chat/completions" || d.APIKeyID != "key_1" || d.RequestID != "req_1" {
		t.Errorf("data = %+v", d)
	}
}

// A chain that runs out of models is one api:chain_exhausted event naming the models attempted,
// the last failure and the status the caller got; a skipped model was not attempted.
func TestAnExhaustedChainIsOneEvent(t *testing.T) {
	rec := &recorder{}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	obs := emit.Observer{Publisher: rec, Now: func() time.Time { return now }}
	key := &apikey.Key{ID: "key_1", UserID: "user_1"}
	ctx := identity.WithRequestID(identity.WithKey(context.Background(), key), "req_1")
	report := chain.Report{Occurred: true, Attempts: []chain.Attempt{
		{Model: "openai/a", Status: chain.Failed, Reason: chain.ServerError},
		{Model: "openai/a", Status: chain.Failed, Reason: chain.ServerError, Retry: 1},
		{Model: "google/b", Status: chain.Skipped, Reason: "unhealthy"},
		{Model: "anthropic/c", Status: chain.Failed, Reason: chain.Timeout},
	}}
	for _, tc := range []struct {
		kind   fault.Kind
		status int
	}{{fault.ChainExhausted, 502}, {fault.ChainRateLimited, 429}} {
		rec.got = nil
		obs.Finished(ctx, completion.Outcome{Surface: "classic", Key: key, Report: report, Err: errors.New("exhausted"), Kind: tc.kind})
		if len(rec.got) != 1 || rec.got[0].Type != event.ChainExhausted {
			t.Fatalf("%v published %v, want one api:chain_exhausted", tc.kind, rec.got)
		}
		var d event.Exhausted
		if err := json.Unmarshal(rec.got[0].Data, &d); err != nil {
			t.Fatal(err)
		}
		want := event.Exhausted{Models: []string{"openai/a", "anthropic/c"}, Attempts: 3, LastModel: "anthropic/c", LastReason: "timeout",
			Status: tc.status, Endpoint: "/chat/completions", Subject: event.Subject{UserID: "user_1", APIKeyID: "key_1", RequestID: "req_1"}, Time: now}
		if !reflect.DeepEqual(d, want) {
			t.Errorf("%v: data = %+v, want %+v", tc.kind, d, want)
		}
	}
	obs.Finished(ctx, completion.Outcome{Surface: "classic", Key: key, Report: report, Err: errors.New("bad request"), Kind: fault.UpstreamRejected})
	if len(rec.got) != 1 {
		t.Errorf("a provider's final refusal published %v", rec.got[1:])
	}
}

// Issue 21 item 2: a key hammering a full limit emits one api:limit_reached per window, and the
// next window's event counts the refusals that emitted none.
func TestAFullWindowEmitsOneLimitEvent(t *testing.T) {
	rec := &recorder{}
	now := time.Date(2026, 12, 1, 10, 15, 30, 0, time.UTC)
	obs := emit.Observer{Publisher: rec, Now: func() time.Time { return now }, Limits: &emit.LimitWindows{}}
	key := &apikey.Key{ID: "key_1"}
	refuse := func(k *apikey.Key, reset time.Time) {
		obs.Finished(context.Background(), completion.Outcome{Surface: "openai", Key: k, Kind: fault.RateLimited,
			Err: fault.New(fault.RateLimited, "", "").Wrap(&limits.Exceeded{Period: limits.Minute, Limit: 60, ResetTime: reset})})
	}
	minute := now.Truncate(time.Minute).Add(time.Minute)
	for range 2000 {
		refuse(key, minute)
	}
	refuse(&apikey.Key{ID: "key_2"}, minute) // another key is its own
	if len(rec.got) != 2 {
		t.Fatalf("2000 refusals of one key and one of another published %d events, want 2", len(rec.got))
	}
	now = minute.Add(time.Second) // the next window
	refuse(key, minute.Add(time.Minute))
	if len(rec.got) != 3 {
		t.Fatalf("the next window's first refusal published %d events in all, want 3", len(rec.got))
	}
	var d event.Limit
	if err := json.Unmarshal(rec.got[2].Data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Refusals != 2000 { // itself and the 1999 the first window emitted none for
		t.Errorf("refusals = %d, want 2000", d.Refusals)
	}
}

// A model served by several deployments is named once among the models attempted; each
// deployment's attempt counts, and the last failure names its deployment.
func TestAnExhaustedChainNamesTheLastDeployment(t *testing.T) {
	rec := &recorder{}
	obs := emit.Observer{Publisher: rec, Now: time.Now}
	report := chain.Report{Occurred: true, Attempts: []chain.Attempt{
		{Model: "anthropic/c", Provider: "anthropic", Status: chain.Failed, Reason: chain.ServerError},
		{Model: "anthropic/c", Provider: "bedrock", Status: chain.Failed, Reason: chain.Timeout},
	}}
	obs.Finished(context.Background(), completion.Outcome{Surface: "openai", Report: report, Err: errors.New("exhausted"), Kind: fault.ChainExhausted})
	var d event.Exhausted
	if len(rec.got) != 1 || json.Unmarshal(rec.got[0].Data, &d) != nil {
		t.Fatalf("published %v", rec.got)
	}
	if !reflect.DeepEqual(d.Models, []string{"anthropic/c"}) || d.Attempts != 2 || d.LastModel != "anthropic/c" || d.LastProvider != "bedrock" || d.LastReason != "timeout" {
		t.Errorf("data = %+v", d)
	}
}

func TestACrossingIsOneBudgetThresholdEvent(t *testing.T) {
	rec := &recorder{}
	now := time.Date(2026, 12, 9, 0, 0, 0, 0, time.UTC)
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	key := &apikey.Key{ID: "key_1", UserID: "user_1"}
	ctx := identity.WithRequestID(identity.WithKey(context.Background(), key), "req_1")
	emit.Thresholds(rec, func() time.Time { return now })(ctx, billing.Crossing{UserID: "user_1", Dollars: true, Threshold: 80,
		Limit: 25_000_000, Spend: 20_500_000, PeriodStart: start, PeriodEnd: start.AddDate(0, 1, 0)})
	if len(rec.got) != 1 || rec.got[0].Type != event.BudgetThreshold {
		t.Fatalf("published %v", rec.got)
	}
	var d event.Threshold
	if err := json.Unmarshal(rec.got[0].Data, &d); err != nil {
		t.Fatal(err)
	}
	want := event.Threshold{Budget: "dollars", Threshold: 80, Limit: 25_000_000, Spend: 20_500_000, LimitDollars: 25, SpendDollars: 20.5,
		PeriodStart: start, PeriodEnd: start.AddDate(0, 1, 0), Subject: event.Subject{UserID: "user_1", APIKeyID: "key_1", RequestID: "req_1"}, Time: now}
	if d != want {
		t.Errorf("data = %+v, want %+v", d, want)
	}
}

// Issue 34 item 11: an event's subject for a web console session names the console and the admin
// key that opened the session; an API key's names neither.
func TestASessionsSubjectNamesTheConsoleAndTheOperator(t *testing.T) {
	ctx := identity.WithRequestID(context.Background(), "req_1")
	session := &apikey.Key{ID: "key_session", UserID: "admin", Admin: true, SessionOf: "key_operator"}
	if got, want := emit.Subject(identity.WithKey(ctx, session)), (event.Subject{UserID: "admin", APIKeyID: "key_session", RequestID: "req_1",
		Via: "console", OperatorKeyID: "key_operator"}); got != want {
		t.Errorf("a session's subject %+v, want %+v", got, want)
	}
	if got := emit.Subject(identity.WithKey(ctx, &apikey.Key{ID: "key_operator", Admin: true})); got.Via != "" || got.OperatorKeyID != "" {
		t.Errorf("an API key's subject %+v names a console", got)
	}
}
