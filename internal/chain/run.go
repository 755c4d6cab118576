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
	// Trace, when set, wraps each attempt of a target for tracing: it returns the context the
	// attempt runs under and a function told the attempt's report line when it ends.
	Trace func(ctx context.Context, t Target) (context.Context, func(Attempt))
	// Health tracks failing models for skip_unhealthy; nil: nothing is tracked or skipped.
	Health *Health
	// Hedge, when set, is asked before a hedge starts (hedge_after_ms) whether next may run
	// beside running — the place to reserve the hedge's quota; false: no hedge, the chain waits
	// for running. nil: every hedge may start.
	Hedge func(ctx context.Context, running, next Target) bool
	// Picker orders the deployments of a model that carry weights; nil: a process-wide random
	// order. The chain itself never reorders targets: whoever builds a plan asks it.
	Picker *Picker
}

// Transition is one failover: Failed gave up with Reason after Latency; Next is tried now. With
// Reason HedgeAfter, Failed has not failed: it is still running, and Next starts beside it. The
// providers name the deployments, for models served by several ("" otherwise).
type Transition struct {
	Failed         string
	FailedProvider string
	Reason         Reason
	Next           string
	NextProvider   string
	Latency        time.Duration
}

// from is the transition away from t's attempt.
func from(t Target, reason Reason, latency time.Duration) *Transition {
	return &Transition{Failed: t.Model, FailedProvider: t.Provider, Reason: reason, Latency: latency}
}

// flight is one attempt under way. The fields after traced serve hedged runs (hedge.go).
type flight struct {
	t      Target
	start  time.Time
	actx   context.Context
	cancel context.CancelCauseFunc
	traced func(Attempt)

	line    int       // its line in the report, taken when it starts so lines stay in start order
	due     time.Time // when hedge_after_ms falls due for it
	hedge   bool      // it started beside another attempt
	dropped bool      // cancelled to make room for a later hedge: it lands as hedge_lost
	settled bool      // hedge_after_ms has been acted on for it (a hedge started, or could not)
	skipped Reason    // why no hedge started beside it; "" when one did or none was due
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
// ctx's deadline. On failure the error is an *Exhausted, ErrCanceled, or a *Stopped holding the
// final error of the last attempt; Result.Report lists the attempts made in every case.
func Run[T any](ctx context.Context, e Engine, p Plan, streaming bool, try Try[T]) (Result[T], error) {
	r := runner[T]{e: e, p: p, streaming: streaming, try: try}
	r.res.Report.Attempts = make([]Attempt, 0, len(p.Targets))
	r.deadline, r.hasDeadline = ctx.Deadline()
	return r.run(ctx)
}

// runner is one Run's state.
type runner[T any] struct {
	e           Engine
	p           Plan
	streaming   bool
	try         Try[T]
	res         Result[T]
	deadline    time.Time
	hasDeadline bool
	retryAfter  time.Duration // the soonest a rate-limited provider will take requests again
}

func (r *runner[T]) left() time.Duration {
	if !r.hasDeadline {
		return time.Duration(1<<63 - 1)
	}
	return time.Until(r.deadline) - r.e.Reserve
}

func (r *runner[T]) exhausted(c StopCause) error {
	return &Exhausted{Attempts: r.res.Report.Attempts, Cause: c, RetryAfter: r.retryAfter}
}

func (r *runner[T]) line(a Attempt) { r.res.Report.Attempts = append(r.res.Report.Attempts, a) }

func (r *runner[T]) run(ctx context.Context) (Result[T], error) {
	if r.p.HedgeAfter > 0 {
		return r.hedged(ctx) // hedge.go; without hedging, attempts run one at a time below
	}
	var pending *Transition // a failover announced once the next model is known
	minWindow := -1         // after a context-length refusal: only larger windows
	for i, t := range r.p.Targets {
		if skip := r.skip(ctx, i, t, minWindow); skip != "" {
			r.passOver(t, skip)
			continue
		}
		if pending != nil {
			r.announce(ctx, pending, t)
			pending = nil
		}
		reason, latency, err := r.model(ctx, t)
		switch {
		case err != nil:
			return r.res, err // final: canceled, a refusal, the deadline
		case reason == "":
			return r.res, nil // served
		}
		r.res.Report.Occurred = true
		if reason == ContextLength {
			minWindow = t.ContextWindow
		}
		pending = from(t, reason, latency)
	}
	if len(r.p.Targets) == 0 {
		panic("chain: Run called with an empty plan")
	}
	return r.res, r.exhausted(EndOfChain)
}

// skip says why target i is passed over, or "": the reason its plan gave it, a model with no
// larger context window than one that refused the request as too long, or — with
// skip_unhealthy — a model (a deployment) cooling down after repeated failures (never the
// chain's last, so a request is never refused on health alone).
func (r *runner[T]) skip(ctx context.Context, i int, t Target, minWindow int) Reason {
	if t.Skip != "" {
		return t.Skip
	}
	if minWindow >= 0 && t.ContextWindow <= minWindow {
		return ContextLength
	}
	if r.p.SkipUnhealthy && r.e.Health != nil && i < len(r.p.Targets)-1 && !r.e.Health.allow(ctx, t.healthKey()) {
		return Unhealthy
	}
	return ""
}

// passOver reports t skipped for skip. A model passed over as unhealthy is a failover (whatever
// serves is not the model the chain would have tried): the report says one occurred, as it does
// after a failed attempt. A deployment the plan skips is routing within its model, and a
// context-length skip follows a failure that said so already.
func (r *runner[T]) passOver(t Target, skip Reason) {
	r.line(t.line(Skipped, skip))
	if skip == Unhealthy {
		r.res.Report.Occurred = true
	}
}

// model tries one model, with the plan's retries: it returns nothing when the model served, the
// failover reason when the chain may go on to the next model, or a final error.
func (r *runner[T]) model(ctx context.Context, t Target) (Reason, time.Duration, error) {
	for n := 0; ; n++ {
		if callerGone(ctx) {
			return "", 0, ErrCanceled
		}
		left := r.left()
		if left <= 0 {
			return "", 0, r.exhausted(DeadlineReached)
		}
		f, tctx, timer := r.begin(ctx, t, left)
		v, err := r.try(tctx, t)
		timer.Stop()
		latency := time.Since(f.start)

		if err = landed(f.actx, err); err == nil {
			a := t.line(Served, "")
			a.LatencyMS, a.Retry = latency.Milliseconds(), n
			r.line(a)
			f.traced(a)
			r.served(ctx, t, v, f.cancel)
			return "", latency, nil
		}
		f.cancel(context.Canceled)
		if callerGone(ctx) {
			a := t.line(Failed, "")
			a.LatencyMS = latency.Milliseconds()
			f.traced(a)
			return "", latency, ErrCanceled
		}
		reason, after := r.failure(ctx, f.actx, t, err)
		a := t.line(Failed, reason)
		a.LatencyMS, a.Retry = latency.Milliseconds(), n
		r.line(a)
		f.traced(a)
		if stop := r.final(ctx, reason, err); stop != nil {
			return "", latency, stop()
		}
		if wait, ok := r.p.Retry.wait(n, reason, after, r.left()); ok {
			if !sleep(ctx, wait) {
				return "", latency, ErrCanceled
			}
			continue
		}
		if !r.p.On.Has(reason) {
			return "", latency, r.exhausted(NotTriggered)
		}
		return reason, latency, nil
	}
}

// begin starts an attempt of t: its context, cut by a timer at the attempt's bound (left: what
// remains of the deadline) that the caller stops once the attempt returns, and its trace, which
// the attempt runs under (the returned context).
func (r *runner[T]) begin(ctx context.Context, t Target, left time.Duration) (flight, context.Context, *time.Timer) {
	f := flight{t: t, start: time.Now(), traced: func(Attempt) {}}
	f.actx, f.cancel = context.WithCancelCause(ctx)
	cancel := f.cancel
	timer := time.AfterFunc(r.limit(t, left), func() { cancel(errAttemptTimeout) })
	tctx := f.actx
	if r.e.Trace != nil {
		tctx, f.traced = r.e.Trace(f.actx, t)
	}
	return f, tctx, timer
}

// limit bounds an attempt of t: its timeout, or streaming its first-token timeout when shorter,
// cut to what is left of the deadline.
func (r *runner[T]) limit(t Target, left time.Duration) time.Duration {
	limit := t.Timeout
	if r.streaming {
		limit = min(limit, t.FirstTokenTimeout)
	}
	return min(limit, left)
}

func (r *runner[T]) health(ctx context.Context, t Target, ok bool, reason Reason) {
	if r.e.Health != nil {
		r.e.Health.record(ctx, t.healthKey(), ok, r.p.On.Has(reason))
	}
}

// sleep waits d unless ctx ends first; it reports whether the wait completed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// landed is the error of an attempt that returned err under actx. An attempt that only answered
// after its timer had fired and canceled its context returned a stream that is already cut: the
// engine's timer decides, this is a timeout.
func landed(actx context.Context, err error) error {
	if err == nil && errors.Is(context.Cause(actx), errAttemptTimeout) {
		return errAttemptTimeout
	}
	return err
}

// served locks in t's answer v; release ends the attempt's context once the caller is done with v.
func (r *runner[T]) served(ctx context.Context, t Target, v T, release context.CancelCauseFunc) {
	r.health(ctx, t, true, "")
	r.res.Value, r.res.Served = v, t.Model
	r.res.Release = func() { release(context.Canceled) }
}

// failure names why an attempt of t, run under actx, failed with err and records it: t's health,
// and the soonest a rate-limited provider takes requests again. A request too long is the caller's
// to fix unless `on` lists context_length (the seed's rule). It also returns the provider's hint of
// when to come back, whatever the reason, for the plan's retries.
func (r *runner[T]) failure(ctx, actx context.Context, t Target, err error) (Reason, time.Duration) {
	reason := classify(ctx, actx, err)
	if reason == ContextLength && !r.p.On.Has(ContextLength) {
		reason = Rejected
	}
	r.health(ctx, t, false, reason)
	var hint RetryHinter
	var after time.Duration
	if errors.As(err, &hint) {
		after = hint.RetryAfterHint()
	}
	if reason == RateLimit && after > 0 && (r.retryAfter == 0 || after < r.retryAfter) {
		r.retryAfter = after
	}
	return reason, after
}

// final says whether an attempt that failed with err for reason ends the chain whatever `on`
// lists: a refusal stops it with the attempt's error; a deadline too near (minus Reserve) leaves
// no time for another attempt, checked before a failover that could not start is announced. It
// returns what makes the chain's error — called when the chain ends, so the error holds the report
// and the retry hint as they are then — or nil when the chain may go on.
func (r *runner[T]) final(ctx context.Context, reason Reason, err error) func() error {
	switch {
	case reason == Rejected:
		return func() error { return &Stopped{Err: err, Attempts: r.res.Report.Attempts} }
	case ctx.Err() != nil || r.left() <= 0:
		return func() error { return r.exhausted(DeadlineReached) }
	}
	return nil
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
