package completion

import (
	"context"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
)

// Tracer opens one span per attempt (package tracing implements it over OpenTelemetry or X-Ray,
// so nothing here imports either). A nil Service.Tracer traces nothing and allocates nothing.
type Tracer interface {
	// Attempt starts attempt a's span under ctx and returns the context the attempt runs under
	// (its provider request carries the span as its parent) and the span, ended exactly once.
	Attempt(ctx context.Context, a AttemptStart) (context.Context, AttemptSpan)
}

// AttemptSpan is one attempt's open span.
type AttemptSpan interface {
	End(e AttemptEnd)
}

// AttemptStart is what is known of an attempt before it is sent.
type AttemptStart struct {
	Model string // the catalog's model name
	// Provider names the deployment the attempt goes to, for a model served by several ("" for
	// one served by one provider).
	Provider string
	Wire     string // the provider's wire format: openai, anthropic, gemini, bedrock
	Index    int    // the attempt's place in the request, from 0, retries and failovers included
	// Body is the request as the caller sent it; a tracer records it only when told to record
	// content.
	Body []byte
}

// AttemptEnd is how an attempt ended. A served attempt ends with its answer: a whole response,
// or a stream's last chunk.
type AttemptEnd struct {
	Line chain.Attempt // status, failover reason and retry number, as the report has it
	// ResponseModel is the model the provider said answered; "" when it said none.
	ResponseModel string
	Usage         *provider.Usage // nil when the provider reported none
	// Output is a whole answer's body (a chat.completion), for a tracer that records content;
	// nil for a stream.
	Output []byte
	// Err is what broke a served stream after its first token; nil otherwise.
	Err error
}

// callTrace is a call's tracing state, allocated only when the service traces.
type callTrace struct {
	traced        int         // attempts traced so far
	servedSpan    AttemptSpan // the served attempt's span, open until its answer ends
	servedLine    chain.Attempt
	responseModel string
	output        []byte // a whole answer's body, for the served span
}

// traceAttempt is the chain's Trace hook for a call whose service has a Tracer: a failed attempt's
// span ends when the chain classifies it; the served attempt's is kept for endServed.
func (c *Call) traceAttempt(ctx context.Context, t chain.Target) (context.Context, func(chain.Attempt)) {
	tr := c.trace
	start := AttemptStart{Model: t.Model, Provider: t.Provider, Index: tr.traced, Body: c.Input.Body}
	tr.traced++
	start.Wire = c.routeOf(t).Wire
	ctx, span := c.svc.Tracer.Attempt(ctx, start)
	return ctx, func(a chain.Attempt) {
		if a.Status == chain.Served {
			tr.servedSpan, tr.servedLine = span, a
			return
		}
		span.End(AttemptEnd{Line: a})
	}
}

// endServed ends the served attempt's span, once, with what it produced.
func (c *Call) endServed(o *Outcome) {
	tr := c.trace
	if tr == nil || tr.servedSpan == nil {
		return
	}
	span := tr.servedSpan
	tr.servedSpan = nil
	e := AttemptEnd{Line: tr.servedLine, Usage: o.Usage, ResponseModel: tr.responseModel, Output: tr.output}
	if o.Resumed == "" {
		e.Err = o.Err
	}
	span.End(e)
}
