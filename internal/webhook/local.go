package webhook

import (
	"context"
	"sync"
	"time"
)

// LocalQueue is the Queue of the local gateway: deliveries wait in the embedded store and a
// Worker runs them when due.
type LocalQueue struct {
	Pending Pending
	Now     func() time.Time
}

// Enqueue implements Queue.
func (q LocalQueue) Enqueue(ctx context.Context, d Delivery, delay time.Duration) error {
	return q.Pending.Put(ctx, d, q.Now().Add(delay))
}

// MaxLanes is how many endpoints the local worker delivers to at once.
const MaxLanes = 8

// scanDue is how many due deliveries one pass reads: enough that deliveries waiting behind a busy
// endpoint do not hide those of the others.
const scanDue = 256

// Worker runs due deliveries of the local queue until its context ends: each endpoint's in order,
// different endpoints' at once (up to MaxLanes), so one receiver that hangs delays only its own.
type Worker struct {
	Pending    Pending
	Dispatcher *Dispatcher
	Now        func() time.Time
	Poll       time.Duration // how often to look for due deliveries

	mu    sync.Mutex
	busy  map[string]bool // endpoints with a lane running
	lanes sync.WaitGroup
}

// Run loops until ctx ends, then waits for the lanes still delivering. A delivery is removed only
// after its attempt was run and recorded, so one interrupted by a stop runs again at the next
// start.
func (w *Worker) Run(ctx context.Context) {
	t := time.NewTicker(w.Poll)
	defer t.Stop()
	for {
		w.start(ctx)
		select {
		case <-ctx.Done():
			w.lanes.Wait()
			return
		case <-t.C:
		}
	}
}

// RunDue runs every delivery due now and returns once they have run.
func (w *Worker) RunDue(ctx context.Context) {
	w.start(ctx)
	w.lanes.Wait()
}

// start reads the due deliveries and starts a lane for each endpoint that has some and none
// running: a busy endpoint's deliveries wait for the next pass, so none runs twice at once.
func (w *Worker) start(ctx context.Context) {
	due, err := w.Pending.Due(ctx, w.Now(), scanDue)
	if err != nil {
		w.Dispatcher.Log.ErrorContext(ctx, "webhook queue unreadable", "err", err)
		return
	}
	var order []string
	byEndpoint := map[string][]Delivery{}
	for _, d := range due {
		if byEndpoint[d.EndpointID] == nil {
			order = append(order, d.EndpointID)
		}
		byEndpoint[d.EndpointID] = append(byEndpoint[d.EndpointID], d)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.busy == nil {
		w.busy = map[string]bool{}
	}
	for _, ep := range order {
		if w.busy[ep] || len(w.busy) >= MaxLanes {
			continue
		}
		w.busy[ep] = true
		w.lanes.Go(func() {
			defer func() {
				w.mu.Lock()
				delete(w.busy, ep)
				w.mu.Unlock()
			}()
			for _, d := range byEndpoint[ep] {
				if ctx.Err() != nil {
					return
				}
				w.deliver(ctx, d)
			}
		})
	}
}

// deliver runs one attempt and takes it off the queue, or puts it back for later when its
// bookkeeping failed.
func (w *Worker) deliver(ctx context.Context, d Delivery) {
	if err := w.Dispatcher.Deliver(ctx, d); err != nil {
		w.Dispatcher.Log.ErrorContext(ctx, "webhook delivery bookkeeping failed; will retry", "delivery", d.ID, "err", err)
		_ = w.Pending.Put(ctx, d, w.Now().Add(Backoff[1]))
		return
	}
	if err := w.Pending.Remove(ctx, d); err != nil {
		w.Dispatcher.Log.ErrorContext(ctx, "webhook queue entry not removed", "delivery", d.ID, "err", err)
	}
}
