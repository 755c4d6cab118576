package webhook

import (
	"context"
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

// Worker runs due deliveries of the local queue until its context ends.
type Worker struct {
	Pending    Pending
	Dispatcher *Dispatcher
	Now        func() time.Time
	Poll       time.Duration // how often to look for due deliveries
}

// Run loops until ctx ends. A delivery is removed only after its attempt was run and
// recorded, so one interrupted by a stop runs again at the next start.
func (w *Worker) Run(ctx context.Context) {
	t := time.NewTicker(w.Poll)
	defer t.Stop()
	for {
		w.RunDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunDue runs every delivery due now.
func (w *Worker) RunDue(ctx context.Context) {
	const batch = 32
	for ctx.Err() == nil {
		due, err := w.Pending.Due(ctx, w.Now(), batch)
		if err != nil {
			w.Dispatcher.Log.ErrorContext(ctx, "webhook queue unreadable", "err", err)
			return
		}
		for _, d := range due {
			if err := w.Dispatcher.Deliver(ctx, d); err != nil {
				w.Dispatcher.Log.ErrorContext(ctx, "webhook delivery bookkeeping failed; will retry", "delivery", d.ID, "err", err)
				_ = w.Pending.Put(ctx, d, w.Now().Add(Backoff[1]))
				continue
			}
			if err := w.Pending.Remove(ctx, d); err != nil {
				w.Dispatcher.Log.ErrorContext(ctx, "webhook queue entry not removed", "delivery", d.ID, "err", err)
			}
		}
		if len(due) < batch {
			return
		}
	}
}
