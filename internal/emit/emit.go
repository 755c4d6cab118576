// Package emit turns what happens during a request into events, naming the caller and request id
// from the request's context: the failover engine's transitions ("A failed → B next" becomes one
// api:model_failover event, published at once, so the next attempt does not wait for it) and the
// subject of admin changes.
package emit

import (
	"context"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// Failovers returns a chain.Engine OnFailover function publishing to p.
func Failovers(p event.Publisher, now func() time.Time) func(context.Context, chain.Transition) {
	return func(ctx context.Context, t chain.Transition) {
		at := now()
		p.Publish(ctx, event.ModelFailoverEvent(event.Failover{
			FailedModel: t.Failed, Reason: string(t.Reason), NextModel: t.Next, LatencyMs: t.Latency.Milliseconds(),
			Subject: Subject(ctx), Time: at,
		}, at))
	}
}

// Subject is the caller of the request ctx belongs to, as events name it.
func Subject(ctx context.Context) event.Subject {
	s := event.Subject{RequestID: identity.RequestID(ctx)}
	if k := identity.Key(ctx); k != nil {
		s.UserID, s.APIKeyID = k.UserID, k.ID
	}
	return s
}
