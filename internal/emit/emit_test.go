package emit_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
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
	if len(rec.got) != 1 || rec.got[0].Type != event.LimitReached {
		t.Fatalf("published %v, want one api:limit_reached (a provider's 429 is not the key's limit)", rec.got)
	}
	var d event.Limit
	if err := json.Unmarshal(rec.got[0].Data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Limit != "requests_per_minute" || d.Max != 60 || !d.ResetTime.Equal(reset) || d.Endpoint != "/v1/chat/completions" || d.APIKeyID != "key_1" || d.RequestID != "req_1" {
		t.Errorf("data = %+v", d)
	}
}
