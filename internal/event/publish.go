package event

import (
	"context"
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

// FlushBounded waits for p's pending publishes for at most FlushTimeout, even when ctx (the
// request's) is already cancelled: a Lambda calls it right before it ends its response stream.
func FlushBounded(ctx context.Context, p Publisher) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FlushTimeout)
	defer cancel()
	return p.Flush(ctx)
}

// sendTimeout bounds one hand-over, so a hung transport cannot pin goroutines forever.
const sendTimeout = 10 * time.Second

// Sender hands events over synchronously (an EventBridge PutEvents, an in-process bus). Async
// turns a Sender into a Publisher.
type Sender interface {
	Send(ctx context.Context, events []Event) error
}

// Async is a Publisher that sends each Publish call on its own goroutine.
type Async struct {
	send Sender
	log  *slog.Logger

	mu      sync.Mutex
	pending int
	idle    chan struct{} // closed when pending drops to 0

	published, failed, abandoned atomic.Int64
}

// NewAsync returns a Publisher over s that logs failures to log.
func NewAsync(s Sender, log *slog.Logger) *Async {
	return &Async{send: s, log: log}
}

// Publish implements Publisher. The send outlives ctx's cancellation (the request that published
// may end first) but keeps its values (trace, request id).
func (a *Async) Publish(ctx context.Context, events ...Event) {
	if len(events) == 0 {
		return
	}
	a.mu.Lock()
	if a.pending == 0 {
		a.idle = make(chan struct{})
	}
	a.pending++
	a.mu.Unlock()
	go func() {
		defer a.done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sendTimeout)
		defer cancel()
		if err := a.send.Send(ctx, events); err != nil {
			a.failed.Add(int64(len(events)))
			a.log.ErrorContext(ctx, "events not published", "count", len(events), "first_type", string(events[0].Type), "err", err)
			return
		}
		a.published.Add(int64(len(events)))
	}()
}

func (a *Async) done() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pending--
	if a.pending == 0 {
		close(a.idle)
	}
}

// Flush implements Publisher. It returns ctx's error when sends are still pending at its end.
func (a *Async) Flush(ctx context.Context) error {
	a.mu.Lock()
	if a.pending == 0 {
		a.mu.Unlock()
		return nil
	}
	idle := a.idle
	a.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		a.abandoned.Add(1)
		a.log.WarnContext(ctx, "events still pending when the flush ended", "err", context.Cause(ctx))
		return context.Cause(ctx)
	}
}

// Stats counts events by outcome since the publisher was made.
type Stats struct {
	Published, Failed int64
	// AbandonedFlushes counts Flush calls that ended with sends still pending.
	AbandonedFlushes int64
}

// Stats returns the counters.
func (a *Async) Stats() Stats {
	return Stats{Published: a.published.Load(), Failed: a.failed.Load(), AbandonedFlushes: a.abandoned.Load()}
}

// Discard is a Publisher that drops every event, for deployments without events.
type Discard struct{}

// Publish implements Publisher.
func (Discard) Publish(context.Context, ...Event) {}

// Flush implements Publisher.
func (Discard) Flush(context.Context) error { return nil }
