package chain

import (
	"context"
	"errors"
	"time"
)

// Hedged attempts (hedge_after_ms, SPEC 3.5a): when the running attempt has produced neither its
// answer nor — streaming — its first content token after HedgeAfter, the next model starts beside
// it. The first of the two to succeed is locked in and the other is cancelled at once (its context
// ends, so its upstream connection closes). A failure of either lets the other run on; once
// neither runs, the chain goes on one attempt at a time as without hedging, and the attempt that
// is then alone may be hedged in its turn. At most two attempts ever run at once: when the hedge
// too has produced nothing after HedgeAfter and a model is left, the older of the two — the one
// that has waited longest, in a heavy tail the least likely to answer next — is cancelled and the
// next model starts beside the hedge (a request whose first two draws are both slow then waits
// about 2 × HedgeAfter plus a fast answer, not the tail).

// errHedgeLost is the cause an attempt is cancelled with when the attempt beside it won.
var errHedgeLost = errors.New("chain: the hedged attempt beside this one served first")

// landing is an attempt's end, sent by its goroutine.
type landing[T any] struct {
	f       *flight
	v       T
	err     error
	latency time.Duration
}

// hedged is run with hedge_after_ms set. Its report lines are in start order; an attempt that
// lost the race is reported Cancelled with reason HedgeLost.
func (r *runner[T]) hedged(ctx context.Context) (Result[T], error) {
	if len(r.p.Targets) == 0 {
		panic("chain: Run called with an empty plan")
	}
	// Buffered for every target: a cancelled attempt never blocks on the send.
	done := make(chan landing[T], len(r.p.Targets))
	var (
		running   []*flight   // in start order
		dropping  []*flight   // cancelled for a later hedge, not yet landed
		next      int         // the first target not yet started or passed over
		held      = -1        // a target chosen for a hedge that could not start: the next to run
		minWindow = -1        // after a context-length refusal: only larger windows
		pending   *Transition // a failover announced once the next model is known
		failLine  = -1        // the report line of pending's failed attempt
		stop      func() error
	)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		if len(running) == 0 {
			if stop != nil {
				r.abandon(dropping, done, errHedgeLost, HedgeLost)
				return r.res, stop()
			}
			i := held
			if held >= 0 && minWindow >= 0 && r.p.Targets[held].ContextWindow <= minWindow {
				r.line(r.p.Targets[held].line(Skipped, ContextLength))
				i = -1
			}
			if i < 0 {
				i = r.nextTarget(ctx, &next, minWindow)
			}
			held = -1
			if i < 0 {
				r.abandon(dropping, done, errHedgeLost, HedgeLost)
				return r.res, r.exhausted(EndOfChain)
			}
			if pending != nil {
				r.announce(ctx, pending, r.p.Targets[i])
				pending, failLine = nil, -1
			}
			f, err := r.launch(ctx, r.p.Targets[i], false, done)
			if err != nil {
				r.abandon(dropping, done, errHedgeLost, HedgeLost)
				return r.res, err
			}
			running = append(running, f)
		}
		var hedgeDue <-chan time.Time
		if cur := running[len(running)-1]; !cur.settled && stop == nil && (held >= 0 || next < len(r.p.Targets)) {
			timer.Reset(time.Until(cur.due))
			hedgeDue = timer.C
		}
		select {
		case <-hedgeDue:
			cur := running[len(running)-1]
			cur.settled = true
			i := held
			if held < 0 {
				i = r.nextTarget(ctx, &next, minWindow)
			}
			held = -1
			if i < 0 {
				continue
			}
			t := r.p.Targets[i]
			if r.e.Hedge != nil && !r.e.Hedge(ctx, cur.t, t) {
				cur.skipped, held = HedgeUnaffordable, i
				continue
			}
			r.res.Report.Occurred = true
			r.announce(ctx, from(cur.t, HedgeAfter, time.Since(cur.start)), t)
			if len(running) == 2 {
				old := running[0]
				old.dropped = true
				old.cancel(errHedgeLost)
				running, dropping = running[1:], append(dropping, old)
			}
			f, err := r.launch(ctx, t, true, done)
			if err != nil {
				// No time is left for another attempt: the running one goes on alone.
				continue
			}
			// Hedges keep the first's cadence (every hedge_after_ms), not that plus each launch's delay.
			f.due = cur.due.Add(r.p.HedgeAfter)
			running = append(running, f)
		case l := <-done:
			if l.f.dropped {
				dropping = remove(dropping, l.f)
				r.end(l, Attempt{Status: Cancelled, Reason: HedgeLost})
				continue
			}
			running = remove(running, l.f)
			if l.err = landed(l.f.actx, l.err); l.err == nil {
				r.win(ctx, l, append(running, dropping...), done)
				return r.res, nil
			}
			l.f.cancel(context.Canceled)
			if callerGone(ctx) {
				r.end(l, Attempt{Status: Failed})
				r.abandon(append(running, dropping...), done, context.Canceled, "")
				return r.res, ErrCanceled
			}
			reason, _ := r.failure(ctx, l.f.actx, l.f.t, l.err)
			r.end(l, Attempt{Status: Failed, Reason: reason})
			if stop != nil {
				continue // the first final outcome stands
			}
			if stop = r.final(ctx, reason, l.err); stop == nil && !r.p.On.Has(reason) {
				stop = func() error { return r.exhausted(NotTriggered) }
			}
			if stop != nil {
				continue // the attempt still beside this one may yet serve; else stop ends the chain
			}
			r.res.Report.Occurred = true
			if reason == ContextLength {
				minWindow = max(minWindow, l.f.t.ContextWindow)
			}
			if l.f.line > failLine {
				// The next model follows the later-started of two failed attempts, as the
				// report's order tells it (metrics derive failovers from the report).
				pending, failLine = from(l.f.t, reason, l.latency), l.f.line
			}
		}
	}
}

// nextTarget returns the index of the next target to try, reporting those passed over on the
// way; -1 when none is left.
func (r *runner[T]) nextTarget(ctx context.Context, next *int, minWindow int) int {
	for *next < len(r.p.Targets) {
		i := *next
		*next++
		t := r.p.Targets[i]
		if skip := r.skip(ctx, i, t, minWindow); skip != "" {
			r.passOver(t, skip)
			continue
		}
		return i
	}
	return -1
}

func (r *runner[T]) announce(ctx context.Context, t *Transition, next Target) {
	t.Next, t.NextProvider = next.Model, next.Provider
	if r.e.OnFailover != nil {
		r.e.OnFailover(ctx, *t)
	}
}

// launch starts an attempt of t in its own goroutine, under the same bound as one run alone.
func (r *runner[T]) launch(ctx context.Context, t Target, hedge bool, done chan<- landing[T]) (*flight, error) {
	if callerGone(ctx) {
		return nil, ErrCanceled
	}
	left := r.left()
	if left <= 0 {
		return nil, r.exhausted(DeadlineReached)
	}
	line := len(r.res.Report.Attempts)
	r.line(Attempt{Model: t.Model, Provider: t.Provider, Hedge: hedge}) // filled in when it lands
	a, tctx, timer := r.begin(ctx, t, left)
	f := &a
	f.hedge, f.line, f.due = hedge, line, f.start.Add(r.p.HedgeAfter)
	go func() {
		v, err := r.try(tctx, t)
		timer.Stop()
		done <- landing[T]{f: f, v: v, err: err, latency: time.Since(f.start)}
	}()
	return f, nil
}

// end fills in a landed attempt's report line and tells its trace.
func (r *runner[T]) end(l landing[T], a Attempt) {
	a.Model, a.Provider, a.LatencyMS, a.Hedge, a.HedgeSkipped = l.f.t.Model, l.f.t.Provider, l.latency.Milliseconds(), l.f.hedge, l.f.skipped
	r.res.Report.Attempts[l.f.line] = a
	l.f.traced(a)
}

// win locks in a served attempt and cancels the one still running beside it, waiting until it
// has ended so its line is in the report and its connection closed.
func (r *runner[T]) win(ctx context.Context, l landing[T], running []*flight, done <-chan landing[T]) {
	r.end(l, Attempt{Status: Served})
	r.served(ctx, l.f.t, l.v, l.f.cancel)
	r.abandon(running, done, errHedgeLost, HedgeLost)
}

// abandon cancels the attempts still running with cause and reports each Cancelled for reason
// (one dropped for a later hedge: HedgeLost) once it has ended; whatever they produced meanwhile
// is dropped with their context.
func (r *runner[T]) abandon(running []*flight, done <-chan landing[T], cause error, reason Reason) {
	for _, f := range running {
		f.cancel(cause)
	}
	for range running {
		l := <-done
		a := Attempt{Status: Cancelled, Reason: reason}
		if l.f.dropped {
			a.Reason = HedgeLost
		}
		r.end(l, a)
	}
}

func remove(fs []*flight, f *flight) []*flight {
	for i, g := range fs {
		if g == f {
			return append(fs[:i], fs[i+1:]...)
		}
	}
	return fs
}
