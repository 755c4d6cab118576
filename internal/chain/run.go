package chain

import (
	"context"
	"errors"
	"time"
)

// Engine runs resolved plans.
type Engine struct {
	// Reserve is kept back from the request's deadline so the gateway can still answer after the
	// last attempt it starts.
	Reserve time.Duration
	// OnFailover is told of each transition "failed → next" (events and audit). It must not block.
	OnFailover func(ctx context.Context, t Transition)
	// Trace, when set, wraps each attempt for tracing: it returns the context the attempt runs
	// under and a function told the attempt's report line when it ends.
	Trace func(ctx context.Context, model string) (context.Context, func(Attempt))
}

// Transition is one failover: Failed gave up with Reason after Latency; Next is tried now.
type Transition struct {
	Failed  string
	Reason  Reason
	Next    string
	Latency time.Duration
}

// Try makes one attempt. For a streaming call it returns once the first content token has arrived,
// so the engine's timer bounds the time to first token.
type Try[T any] func(ctx context.Context, t Target) (T, error)

// Result is a chain's outcome. Value is the served attempt's result; Release must be called when
// the caller is done with it, since a stream keeps reading under the attempt's context.
type Result[T any] struct {
	Value   T
	Served  string
	Report  Report
	Release func()
}

var errAttemptTimeout = errors.New("chain: attempt timed out")

// ErrStalled is the cause a stream consumer cancels an attempt with when the upstream stops
// sending after the first token.
var ErrStalled = errors.New("chain: stream stalled")

// Run tries the plan's targets in order. streaming selects the first-token timeout as the bound
// of each attempt (capped by its overall timeout). Every attempt is also cut to what remains of
// ctx's deadline. On failure the error is an *Exhausted, ErrCanceled, or the final error of the
// last attempt; Result.Report lists the attempts made in every case.
func Run[T any](ctx context.Context, e Engine, p Plan, streaming bool, try Try[T]) (Result[T], error) {
	var res Result[T]
	res.Report.Attempts = make([]Attempt, 0, len(p.Targets))
	var retryAfter time.Duration // the soonest a rate-limited provider will take requests again
	deadline, hasDeadline := ctx.Deadline()
	noTimeLeft := func() bool { return hasDeadline && time.Until(deadline)-e.Reserve <= 0 }

	for i, t := range p.Targets {
		if callerGone(ctx) {
			return res, ErrCanceled
		}
		limit := t.Timeout
		if streaming {
			limit = min(limit, t.FirstTokenTimeout)
		}
		if hasDeadline {
			remaining := time.Until(deadline) - e.Reserve
			if remaining <= 0 {
				return res, &Exhausted{Attempts: res.Report.Attempts, Cause: DeadlineReached, RetryAfter: retryAfter}
			}
			limit = min(limit, remaining)
		}

		start := time.Now()
		actx, cancel := context.WithCancelCause(ctx)
		timer := time.AfterFunc(limit, func() { cancel(errAttemptTimeout) })
		tctx, traced := actx, func(Attempt) {}
		if e.Trace != nil {
			tctx, traced = e.Trace(actx, t.Model)
		}
		v, err := try(tctx, t)
		timer.Stop()
		latency := time.Since(start)

		if err == nil && errors.Is(context.Cause(actx), errAttemptTimeout) {
			// The attempt only answered after its timer had fired and canceled its context, so a
			// stream it returned is already cut: the engine's timer decides, this is a timeout.
			err = errAttemptTimeout
		}
		if err == nil {
			res.Report.Attempts = append(res.Report.Attempts, Attempt{Model: t.Model, Status: Served, LatencyMS: latency.Milliseconds()})
			traced(res.Report.Attempts[i])
			res.Report.Occurred = i > 0
			res.Value, res.Served = v, t.Model
			res.Release = func() { cancel(context.Canceled) }
			return res, nil
		}
		cancel(context.Canceled)

		if callerGone(ctx) {
			traced(Attempt{Model: t.Model, Status: Failed, LatencyMS: latency.Milliseconds()})
			return res, ErrCanceled
		}
		reason := classify(ctx, actx, err)
		res.Report.Attempts = append(res.Report.Attempts, Attempt{Model: t.Model, Status: Failed, Reason: reason, LatencyMS: latency.Milliseconds()})
		traced(res.Report.Attempts[i])
		var hint RetryHinter
		if reason == RateLimit && errors.As(err, &hint) {
			if d := hint.RetryAfterHint(); d > 0 && (retryAfter == 0 || d < retryAfter) {
				retryAfter = d
			}
		}
		switch {
		case reason == Rejected:
			return res, &Stopped{Err: err, Attempts: res.Report.Attempts}
		case ctx.Err() != nil || noTimeLeft():
			// Checked before announcing a failover that could not start: an attempt cut to the
			// deadline (minus Reserve) leaves no time for the next one.
			return res, &Exhausted{Attempts: res.Report.Attempts, Cause: DeadlineReached, RetryAfter: retryAfter}
		case !p.On.Has(reason):
			return res, &Exhausted{Attempts: res.Report.Attempts, Cause: NotTriggered, RetryAfter: retryAfter}
		case i == len(p.Targets)-1:
			return res, &Exhausted{Attempts: res.Report.Attempts, Cause: EndOfChain, RetryAfter: retryAfter}
		}
		res.Report.Occurred = true
		if e.OnFailover != nil {
			e.OnFailover(ctx, Transition{Failed: t.Model, Reason: reason, Next: p.Targets[i+1].Model, Latency: latency})
		}
	}
	panic("chain: Run called with an empty plan")
}

// classify names why an attempt failed. The engine's own timers decide timeouts, whatever error
// the provider surfaced when its context was cut.
func classify(parent, attempt context.Context, err error) Reason {
	if parent.Err() != nil || errors.Is(context.Cause(attempt), errAttemptTimeout) {
		return Timeout
	}
	if r := ReasonOf(err); r.bit() != 0 {
		return r
	}
	// No reason, or one that is not a failover reason: final.
	return Rejected
}

// callerGone reports whether the caller canceled ctx (as opposed to its deadline passing).
func callerGone(ctx context.Context) bool {
	return ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded)
}
