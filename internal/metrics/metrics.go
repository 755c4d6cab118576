// Package metrics is the gateway's one definition of what it measures, with two outputs: a
// Prometheus registry scraped at GET /metrics on the local server (Prometheus), and one CloudWatch
// Embedded Metric Format record per request in a Lambda function's log (EMF).
//
// Both are fed the same way: as a completion.Observer (Summarize turns an Outcome into a Request,
// the one place that decides what a request counts as) and through small hooks where the rest
// happens (a breaker opening, a webhook delivery ending, events the publisher could not hand
// over). Every dimension is low-cardinality — surface, model, provider, reason, status, kind —
// and none is ever a key id, a user id or anything from a prompt: models are the catalog's names,
// and a name outside the catalog (one a provider with any_model admitted) is counted as
// "<provider>/other" (Catalogued).
package metrics

import (
	"context"
	"errors"
	"strings"

	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/limits"
)

// Instrument is one measurement: its Prometheus name (after the secureai_ prefix) and labels,
// its EMF metric name and unit where the per-request record carries it ("" where it does not).
type Instrument struct {
	Name   string
	Help   string
	Labels []string
	EMF    string
	Unit   string // an EMF unit: Count, Milliseconds, None
}

// The instruments. The Prometheus names are secureai_<Name>; counters end in _total.
var (
	Requests      = Instrument{"requests_total", "Completions by surface and outcome (ok or the error kind).", []string{"surface", "outcome"}, "Requests", "Count"}
	Failovers     = Instrument{"failovers_total", "Failover transitions by the model given up (or, reason hedge_after, hedged), the model tried next and why.", []string{"from_model", "to_model", "reason"}, "Failovers", "Count"}
	Attempts      = Instrument{"attempts_total", "Attempts by model, provider and status (served, failed, skipped, resumed, cancelled).", []string{"model", "provider", "status"}, "Attempts", "Count"}
	AttemptTime   = Instrument{"attempt_duration_seconds", "Attempt latency by model; a streamed attempt's runs to its first content token.", []string{"model"}, "Latency", "Milliseconds"}
	FirstToken    = Instrument{"time_to_first_token_seconds", "Time to the first content token of a streamed request's serving attempt, by model.", []string{"model"}, "TimeToFirstToken", "Milliseconds"}
	Tokens        = Instrument{"tokens_total", "Tokens by the model that produced them and direction (input, output).", []string{"model", "direction"}, "", ""}
	Cost          = Instrument{"cost_microdollars_total", "What served requests cost, in millionths of a dollar, by model (billed requests only).", []string{"model"}, "CostMicroUSD", "None"}
	Refusals      = Instrument{"limit_refusals_total", "Requests refused by a key's request limit, its points or its budget.", []string{"limit"}, "LimitRefusals", "Count"}
	Retries       = Instrument{"retries_total", "Same-model retries by model.", []string{"model"}, "Retries", "Count"}
	Resumed       = Instrument{"resumed_streams_total", "Interrupted streams continued by another model, by the model that resumed.", []string{"model"}, "ResumedStreams", "Count"}
	BreakerOpens  = Instrument{"breaker_opens_total", "Circuit breakers opened, by scope (key, user) and cause (auto, admin).", []string{"scope", "cause"}, "BreakerOpens", "Count"}
	Webhooks      = Instrument{"webhook_deliveries_total", "Webhook delivery attempts by outcome (delivered, retrying, failed).", []string{"outcome"}, "WebhookDeliveries", "Count"}
	Unpublished   = Instrument{"events_unpublished_total", "Events the publisher could not hand over: put in the outbox for later, or lost.", []string{"fate"}, "EventsUnpublished", "Count"}
	InputTokens   = Instrument{EMF: "InputTokens", Unit: "Count"}  // EMF's half of Tokens
	OutputTokens  = Instrument{EMF: "OutputTokens", Unit: "Count"} // EMF's half of Tokens
	FailedAttempt = Instrument{EMF: "FailedAttempts", Unit: "Count"}
)

// Instruments lists the Prometheus instruments, in the order they are registered.
var Instruments = []*Instrument{&Requests, &Failovers, &Attempts, &AttemptTime, &FirstToken, &Tokens, &Cost, &Refusals, &Retries, &Resumed, &BreakerOpens, &Webhooks, &Unpublished}

// Outcomes of a webhook delivery attempt.
const (
	Delivered = "delivered" // the receiver took it
	Retrying  = "retrying"  // it failed; another attempt is queued
	Failed    = "failed"    // its last attempt failed
)

// Fates of an event the publisher could not hand over.
const (
	Outbox = "outbox" // kept in the outbox, relayed later
	Lost   = "lost"   // neither published nor kept (its content is in the log)
)

// Recorder is where measurements go. Both outputs implement it, so the wiring is the same.
type Recorder interface {
	completion.Observer
	// BreakerOpened counts a breaker's opening: scope is the subject's kind, never its id.
	BreakerOpened(scope, cause string)
	// WebhookDelivery counts a delivery attempt's end (Delivered, Retrying, Failed).
	WebhookDelivery(outcome string)
	// EventsUnpublished counts n events the publisher could not hand over (Outbox, Lost).
	EventsUnpublished(fate string, n int)
}

// Request is what one completion adds to the metrics, summarized from its Outcome.
type Request struct {
	RequestID string // EMF's record carries it as a property to find the request's log lines; never a label
	Surface   string
	Outcome   string // "ok" or the error's kind
	Stream    bool
	Served    string           // the model that answered; "" when none did
	Lines     []chain.Attempt  // the report's lines, shared with the Outcome, not copied
	Resumed   string           // the model that continued an interrupted stream
	Refusal   string           // "requests", "points", "budget"; "" when no limit refused it
	In, Out   [2]int64         // tokens of Served [0] and Resumed [1]
	Micros    [2]int64         // cost of Served [0] and Resumed [1], when billed
	Billed    [2]bool          //
	First     chain.Transition // the request's first failover; Failed is "" when none
}

// Summarize is the one definition of what a completion counts as.
func Summarize(o *completion.Outcome, r *Request) {
	*r = Request{RequestID: o.RequestID, Surface: o.Surface, Outcome: "ok", Stream: o.Stream, Served: o.Served,
		Lines: o.Report.Attempts, Resumed: o.Resumed}
	if r.Surface == "" {
		r.Surface = "unknown"
	}
	if o.Err != nil {
		r.Outcome = o.Kind.String()
		r.Refusal = refusal(o)
	}
	if o.Usage != nil {
		r.In[0], r.Out[0] = int64(o.Usage.PromptTokens), int64(o.Usage.CompletionTokens)
	}
	if o.ResumedUsage != nil {
		r.In[1], r.Out[1] = int64(o.ResumedUsage.PromptTokens), int64(o.ResumedUsage.CompletionTokens)
	}
	if o.Bill != nil {
		r.Micros[0], r.Billed[0] = o.Bill.Micros, true
	}
	if o.ResumedBill != nil {
		r.Micros[1], r.Billed[1] = o.ResumedBill.Micros, true
	}
	r.Transitions(func(t chain.Transition) bool { r.First = t; return false })
}

// Transitions calls yield with each failover of the request, in order, as the chain announced
// them (completion.Observer.FailedOver): a model given up after its failed attempts (and retries),
// to the next model attempted, passing over skipped ones; and each hedge (hedge_after_ms), the
// attempt before it to the model started beside it, with reason hedge_after. A resumed stream is
// not a failover.
func (r *Request) Transitions(yield func(chain.Transition) bool) {
	var failed, last *chain.Attempt // the last attempt made, and it again when it failed
	for i := range r.Lines {
		a := &r.Lines[i]
		switch {
		case a.Status == chain.Skipped || a.Status == chain.Resumed:
			continue
		case a.Hedge && last != nil:
			if !yield(chain.Transition{Failed: last.Model, FailedProvider: last.Provider, Reason: chain.HedgeAfter, Next: a.Model, NextProvider: a.Provider}) {
				return
			}
		case a.Retry == 0 && failed != nil:
			if !yield(chain.Transition{Failed: failed.Model, FailedProvider: failed.Provider, Reason: failed.Reason, Next: a.Model, NextProvider: a.Provider}) {
				return
			}
		}
		failed, last = nil, a
		if a.Status == chain.Failed {
			failed = a
		}
	}
}

// refusal names the limit that refused the request, as the api:limit_reached event does: a
// provider's 429 is no refusal.
func refusal(o *completion.Outcome) string {
	switch o.Kind {
	case fault.RateLimited:
		var ex *limits.Exceeded
		if errors.As(o.Err, &ex) {
			return "requests"
		}
	case fault.QuotaExceeded:
		if fault.From(o.Err).Code == "points_exhausted" {
			return "points"
		}
		return "budget"
	}
	return ""
}

// ProviderOf is the default provider of a model: its name's prefix before "/".
func ProviderOf(model string) string {
	p, _, _ := strings.Cut(model, "/")
	return p
}

// BreakerAudit wraps a breaker audit hook (inner may be nil) to count openings in rec.
func BreakerAudit(rec Recorder, inner func(context.Context, breaker.Event)) func(context.Context, breaker.Event) {
	return func(ctx context.Context, e breaker.Event) {
		if inner != nil {
			inner(ctx, e)
		}
		if e.Action == "open" {
			cause := e.Actor
			if strings.HasPrefix(cause, "admin:") {
				cause = "admin" // never the admin key's id
			}
			rec.BreakerOpened(e.State.Subject.Kind, cause)
		}
	}
}
