// Package emit turns what happens during a request into events, naming the caller and request id
// from the request's context: the failover engine's transitions ("A failed → B next" becomes one
// api:model_failover event, published at once, so the next attempt does not wait for it) and the
// subject of admin changes.
package emit

import (
	"context"
	"time"

	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// Subject is the caller of the request ctx belongs to, as events name it. A web console session
// names the console and the admin key whose operator opened it, beside its own id.
func Subject(ctx context.Context) event.Subject {
	s := event.Subject{RequestID: identity.RequestID(ctx)}
	if k := identity.Key(ctx); k != nil {
		s.UserID, s.APIKeyID = k.UserID, k.ID
		if k.IsSession() {
			s.Via, s.OperatorKeyID = event.ViaConsole, k.SessionOf
		}
	}
	return s
}

// Thresholds returns the ledger's hook for budget thresholds: each crossing is published as a
// billing:budget_threshold event about its user, naming the request (from ctx) that reached it.
func Thresholds(p event.Publisher, now func() time.Time) func(context.Context, billing.Crossing) {
	return func(ctx context.Context, c billing.Crossing) {
		s := Subject(ctx)
		s.UserID = c.UserID
		th := event.Threshold{Budget: "points", Threshold: c.Threshold, Limit: c.Limit, Spend: c.Spend,
			PeriodStart: c.PeriodStart, PeriodEnd: c.PeriodEnd, Subject: s}
		if c.Dollars {
			th.Budget, th.LimitDollars, th.SpendDollars = "dollars", billing.Dollars(c.Limit), billing.Dollars(c.Spend)
		}
		p.Publish(ctx, event.BudgetThresholdEvent(th, now()))
	}
}
