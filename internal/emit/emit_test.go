package emit_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/emit"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/identity"
)

type recorder struct{ got []event.Event }

func (r *recorder) Publish(_ context.Context, evs ...event.Event) { r.got = append(r.got, evs...) }
func (r *recorder) Flush(context.Context) error                   { return nil }

func TestEachTransitionIsOneFailoverEventNamingTheCaller(t *testing.T) {
	rec := &recorder{}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	on := emit.Failovers(rec, func() time.Time { return now })
	ctx := identity.WithRequestID(identity.WithKey(context.Background(), &apikey.Key{ID: "key_1", UserID: "user_1"}), "req_1")
	on(ctx, chain.Transition{Failed: "openai/a", Reason: chain.ConnectionError, Next: "google/b", Latency: 1500 * time.Millisecond})
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
