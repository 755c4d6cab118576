package event

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Publisher carries events to their consumers. Publish never fails the caller and never blocks it
// on the network: a failure is logged and counted. Flush waits until what was published has been
// handed over, or until ctx ends; a Lambda calls it before ending its invocation, because a
// frozen instance would otherwise lose events still in flight.
type Publisher interface {
	Publish(ctx context.Context, events ...Event)
	Flush(ctx context.Context) error
}

// FlushTimeout bounds how long an invocation waits in Flush before it ends anyway.
const FlushTimeout = time.Second

// HandOverAfter is how long an Async with an Outbox gives its Sender to hand an event over, from
// its Publish: a Flush then stops waiting for the Sender and puts the event in the outbox instead.
// A failover event, published as the chain moves on, is usually long handed over when the
// response ends; an event published just before gets this long after the last byte, plus the
// outbox's one call when the Sender is slower still.
const HandOverAfter = 200 * time.Millisecond

// sendTimeout bounds one hand-over, so a hung transport cannot pin goroutines forever.
const sendTimeout = 10 * time.Second

// errHandOver ends a send that Flush stopped waiting for.
var errHandOver = errors.New("event: the flush handed the events to the outbox")

// Sender hands events over synchronously (an EventBridge PutEvents, an in-process bus, an SQS
// outbox). Async turns a Sender into a Publisher.
type Sender interface {
	Send(ctx context.Context, events []Event) error
}

// Async is a Publisher that sends each Publish call on its own goroutine. Build it with NewAsync.
type Async struct {
	// Outbox, when set, is the durable way round the Sender (a queue relayed to the bus later):
	// events the Sender fails to take, or has not taken HandOverAfter after their Publish when
	// Flush is waiting, are sent there, so an invocation ends on time without losing them. Events
	// may then arrive twice (the Sender may yet succeed); consumers deduplicate by event id.
	// Set it before the first Publish.
	Outbox Sender
	// Unpublished, when set, is told of events the Sender did not take: n put in the outbox
	// (fate "outbox") or lost ("lost"). For metrics; set it before the first Publish.
	Unpublished func(fate string, n int)

	send Sender
	log  *slog.Logger

	mu   sync.Mutex
	jobs map[*job]struct{} // publishes not yet handed over
	idle chan struct{}     // closed when jobs empties

	published, deferred, failed, abandoned atomic.Int64
}

// job is one Publish call being handed over.
type job struct {
	due      time.Time               // when Flush stops waiting for the Sender
	handOver context.CancelCauseFunc // ends the Sender's attempt
}

// NewAsync returns a Publisher over s that logs failures to log.
func NewAsync(s Sender, log *slog.Logger) *Async {
	return &Async{send: s, log: log, jobs: map[*job]struct{}{}}
}

// Publish implements Publisher. The send outlives ctx's cancellation (the request that published
// may end first) but keeps its values (trace, request id).
func (a *Async) Publish(ctx context.Context, events ...Event) {
	if len(events) == 0 {
		return
	}
	base := context.WithoutCancel(ctx)
	sctx, cancel := context.WithTimeout(base, sendTimeout)
	sctx, handOver := context.WithCancelCause(sctx)
	j := &job{due: time.Now().Add(HandOverAfter), handOver: handOver}
	a.mu.Lock()
	if len(a.jobs) == 0 {
		a.idle = make(chan struct{})
	}
	a.jobs[j] = struct{}{}
	a.mu.Unlock()
	go func() {
		defer a.done(j)
		err := a.send.Send(sctx, events)
		handOver(nil)
		cancel()
		switch {
		case err == nil:
			a.published.Add(int64(len(events)))
		case a.Outbox == nil:
			a.failed.Add(int64(len(events)))
			a.unpublished("lost", len(events))
			a.log.ErrorContext(base, "events not published", "count", len(events), "first_type", string(events[0].Type), "err", err)
		default:
			a.toOutbox(base, events, err)
		}
	}()
}

// toOutbox sends what the Sender did not take to the outbox: every event of the Publish, since a
// partial failure's successes cannot be told apart by every Sender (duplicates are deduplicated).
func (a *Async) toOutbox(ctx context.Context, events []Event, cause error) {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if err := a.Outbox.Send(ctx, events); err != nil {
		a.failed.Add(int64(len(events)))
		a.unpublished("lost", len(events))
		// The events themselves go to the log: the one record left of them.
		a.log.ErrorContext(ctx, "events lost: neither published nor put in the outbox", "count", len(events),
			"events", events, "err", errors.Join(cause, err))
		return
	}
	a.deferred.Add(int64(len(events)))
	a.unpublished("outbox", len(events))
	a.log.WarnContext(ctx, "events put in the outbox for a later publish", "count", len(events),
		"first_type", string(events[0].Type), "cause", cause)
}

func (a *Async) unpublished(fate string, n int) {
	if a.Unpublished != nil {
		a.Unpublished(fate, n)
	}
}

func (a *Async) done(j *job) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.jobs, j)
	if len(a.jobs) == 0 {
		close(a.idle)
	}
}

// Flush implements Publisher. With an Outbox it hands each event the Sender has not taken by its
// HandOverAfter to the outbox and waits for that instead. It returns ctx's error when hand-overs
// are still pending at its end.
func (a *Async) Flush(ctx context.Context) error {
	for {
		idle, next := a.handOverDue(time.Now())
		if idle == nil {
			return nil
		}
		var due <-chan time.Time // nil: nothing falls due
		if !next.IsZero() {
			due = time.After(time.Until(next))
		}
		select {
		case <-idle:
			return nil
		case <-due:
		case <-ctx.Done():
			a.abandoned.Add(1)
			a.log.WarnContext(ctx, "events still pending when the flush ended", "err", context.Cause(ctx))
			return context.Cause(ctx)
		}
	}
}

// handOverDue ends the Sender's attempts that are due (with an Outbox), and returns the channel
// closed when nothing is pending (nil: nothing is now) and when the next attempt falls due.
func (a *Async) handOverDue(now time.Time) (idle <-chan struct{}, next time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.jobs) == 0 {
		return nil, time.Time{}
	}
	if a.Outbox != nil {
		for j := range a.jobs {
			switch {
			case !now.Before(j.due):
				j.handOver(errHandOver) // no-op once done
			case next.IsZero() || j.due.Before(next):
				next = j.due
			}
		}
	}
	return a.idle, next
}

// Stats counts events by outcome since the publisher was made.
type Stats struct {
	Published int64
	// Deferred went to the outbox; Failed went nowhere.
	Deferred, Failed int64
	// AbandonedFlushes counts Flush calls that ended with hand-overs still pending.
	AbandonedFlushes int64
}

// Stats returns the counters.
func (a *Async) Stats() Stats {
	return Stats{Published: a.published.Load(), Deferred: a.deferred.Load(), Failed: a.failed.Load(), AbandonedFlushes: a.abandoned.Load()}
}

// Discard is a Publisher that drops every event, for deployments without events.
type Discard struct{}

// Publish implements Publisher.
func (Discard) Publish(context.Context, ...Event) {}

// Flush implements Publisher.
func (Discard) Flush(context.Context) error { return nil }
