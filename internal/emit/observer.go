package emit

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
	"github.com/secureai-gateway/gateway/internal/limits"
)

// Observer publishes what completions do: one api:model_failover per transition, published at
// once so the next attempt never waits for it, and api:limit_reached when a key's request limit
// refused a request. It is the completion service's Observer.
type Observer struct {
	Publisher event.Publisher
	Now       func() time.Time
	// Limits keeps a key's refusals by one limit to one api:limit_reached per window; nil: one
	// per refused request.
	Limits *LimitWindows
}

// FailedOver implements completion.Observer.
func (o Observer) FailedOver(ctx context.Context, f completion.Failover) {
	at := o.Now()
	s := event.Subject{RequestID: f.RequestID} // the seam names the caller; ctx need not be read
	if f.Key != nil {
		s.UserID, s.APIKeyID = f.Key.UserID, f.Key.ID
	}
	o.Publisher.Publish(ctx, event.ModelFailoverEvent(event.Failover{
		FailedModel: f.Failed, FailedProvider: f.FailedProvider, Reason: string(f.Reason), NextModel: f.Next, NextProvider: f.NextProvider,
		LatencyMs: f.Latency.Milliseconds(), Endpoint: endpoints[f.Surface], Subject: s, Time: at,
	}, at))
}

// endpoints names each surface's route in its events.
var endpoints = map[string]string{"openai": "/v1/chat/completions", "classic": "/chat/completions",
	"messages": "/v1/messages", "responses": "/v1/responses"}

// Finished implements completion.Observer: a request refused by the key's request limit, its
// points or its budget is an api:limit_reached event (a provider's 429 is not), and a chain that
// ran out of models an api:chain_exhausted event.
func (o Observer) Finished(ctx context.Context, out completion.Outcome) {
	if out.Err != nil && (out.Kind == fault.ChainExhausted || out.Kind == fault.ChainRateLimited) {
		o.exhausted(ctx, out)
		return
	}
	var l event.Limit
	var ex *limits.Exceeded
	switch {
	case out.Kind == fault.RateLimited && errors.As(out.Err, &ex):
		l = event.Limit{Limit: limitName(ex.Period), Max: int64(ex.Limit), ResetTime: ex.ResetTime}
	case out.Kind == fault.QuotaExceeded:
		l.Limit = "budget"
		if fault.From(out.Err).Code == "points_exhausted" {
			l.Limit = "points"
		}
	default:
		return
	}
	at := o.Now()
	if o.Limits != nil && out.Key != nil {
		emit, refusals := o.Limits.admit(out.Key.ID, l.Limit, l.ResetTime, at)
		if !emit {
			return
		}
		l.Refusals = refusals
	}
	l.Endpoint, l.Subject, l.Time = endpoints[out.Surface], Subject(ctx), at
	o.Publisher.Publish(ctx, event.LimitReachedEvent(l, at))
}

// exhausted publishes the api:chain_exhausted event of out, whose chain ran out of models.
func (o Observer) exhausted(ctx context.Context, out completion.Outcome) {
	at := o.Now()
	x := event.Exhausted{Status: 502, Endpoint: endpoints[out.Surface], Subject: Subject(ctx), Time: at}
	if out.Kind == fault.ChainRateLimited {
		x.Status = 429
	}
	for _, a := range out.Report.Attempts {
		if a.Status == chain.Skipped { // passed over, not attempted
			continue
		}
		x.Attempts++
		if !slices.Contains(x.Models, a.Model) {
			x.Models = append(x.Models, a.Model)
		}
		if a.Status == chain.Failed {
			x.LastModel, x.LastProvider, x.LastReason = a.Model, a.Provider, string(a.Reason)
		}
	}
	o.Publisher.Publish(ctx, event.ChainExhaustedEvent(x, at))
}

func limitName(p limits.Period) string {
	switch p {
	case limits.Minute:
		return "requests_per_minute"
	case limits.Hour:
		return "requests_per_hour"
	case limits.Day:
		return "daily"
	}
	return "monthly"
}

// adminTypes are the events of keyadmin's actions.
var adminTypes = map[string]event.Type{
	"api_key.create": event.AdminAPIKeyCreated, "api_key.update": event.AdminAPIKeyUpdated,
	"api_key.revoke": event.AdminAPIKeyRevoked, "user.create": event.AdminUserUpdated, "user.update": event.AdminUserUpdated,
}

// AdminChanges returns keyadmin's Audit hook: each change of a key or a user becomes an admin
// event (its before and after carry no secret: keyadmin never puts one there).
func AdminChanges(p event.Publisher, now func() time.Time, log *slog.Logger) func(context.Context, keyadmin.AdminChange) {
	return func(ctx context.Context, c keyadmin.AdminChange) {
		t, ok := adminTypes[c.Action]
		if !ok {
			log.WarnContext(ctx, "admin change without an event type", "action", c.Action)
			return
		}
		kind, verb, _ := strings.Cut(c.Action, ".")
		s := Subject(ctx)
		s.RequestID = c.RequestID
		at := now()
		ev, err := event.AdminEvent(t, event.Admin{Action: verb, Target: event.Target{Kind: kind, ID: c.Target}, Subject: s, Time: at}, c.Before, c.After, at)
		if err != nil {
			log.ErrorContext(ctx, "admin event not published", "action", c.Action, "err", err)
			return
		}
		p.Publish(ctx, ev)
	}
}

// Breakers returns the circuit breakers' audit hook: each opening and closing is an event.
func Breakers(p event.Publisher) func(context.Context, breaker.Event) {
	return func(ctx context.Context, e breaker.Event) {
		cause := "admin"
		if !strings.HasPrefix(e.Actor, "admin:") {
			cause = e.Actor
		}
		p.Publish(ctx, event.BreakerEvent(e.Action == "open", event.Breaker{
			Scope: e.State.Subject.Kind, ScopeID: e.State.Subject.ID, Cause: cause, Until: e.State.Until, Subject: Subject(ctx), Time: e.At,
		}, e.At))
	}
}
