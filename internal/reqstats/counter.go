package reqstats

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/secureai-gateway/gateway/internal/completion"
)

// DefaultFlushInterval is how often a process writes its counts: a minute's counts at a time.
const DefaultFlushInterval = time.Minute

// nSlots minutes are counted at once without a lock: a flush empties them at least every few
// minutes, and a slot is taken for a new minute (under the lock) once a minute.
const nSlots = 4

// slot counts the requests of one minute.
type slot struct {
	minute atomic.Int64 // unix minute the counts belong to
	n      [nSurfaces][nOutcomes]atomic.Int64
}

// Counter counts a process's completed chat requests per minute, in memory, and flushes them to a
// Store. It is a completion.Observer: counting a request is one atomic add, with a lock only the
// first time a minute is seen. The zero value is not usable: call NewCounter.
type Counter struct {
	slots    [nSlots]slot
	interval time.Duration
	now      func() time.Time

	mu sync.Mutex
	// retired holds counts taken from a slot reused for a newer minute, or added for a minute
	// no slot holds any more; pending holds buckets a failed flush left. Both wait for the next flush.
	retired map[int64]*Counts
	pending map[bucketKey]*Counts

	flushing  sync.Mutex   // one flush at a time
	lastFlush atomic.Int64 // unix nanoseconds of the last flush (or the Counter's start)
}

type bucketKey struct {
	res   Resolution
	start int64 // unix seconds
}

// NewCounter returns a Counter flushing every interval (≤ 0: DefaultFlushInterval); now is the
// clock (nil: time.Now).
func NewCounter(interval time.Duration, now func() time.Time) *Counter {
	if interval <= 0 {
		interval = DefaultFlushInterval
	}
	if now == nil {
		now = time.Now
	}
	c := &Counter{interval: interval, now: now, retired: map[int64]*Counts{}, pending: map[bucketKey]*Counts{}}
	c.lastFlush.Store(now().UnixNano())
	return c
}

// Interval is how often the Counter flushes.
func (c *Counter) Interval() time.Duration { return c.interval }

// Add counts one request that ended at t.
func (c *Counter) Add(t time.Time, s Surface, o Outcome) {
	m := t.Unix() / 60
	sl := &c.slots[m%nSlots]
	if sl.minute.Load() != m && !c.claim(sl, m, s, o) {
		return
	}
	sl.n[s][o].Add(1)
}

// claim makes sl count minute m, moving what it counted for an older minute to retired. A request
// of a minute older than the slot's (a clock step back, a request that ended minutes ago) is added
// to retired directly, and claim returns false.
func (c *Counter) claim(sl *slot, m int64, s Surface, o Outcome) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch old := sl.minute.Load(); {
	case old == m:
		return true
	case old > m:
		c.retiredOf(m)[s][o]++
		return false
	}
	c.retire(sl)
	sl.minute.Store(m)
	return true
}

// retire moves sl's counts to retired. Call it with mu held.
func (c *Counter) retire(sl *slot) {
	var n Counts
	for s := range sl.n {
		for o := range sl.n[s] {
			n[s][o] = sl.n[s][o].Swap(0)
		}
	}
	if !n.Zero() {
		c.retiredOf(sl.minute.Load()).Add(&n)
	}
}

func (c *Counter) retiredOf(m int64) *Counts {
	n := c.retired[m]
	if n == nil {
		n = &Counts{}
		c.retired[m] = n
	}
	return n
}

// FailedOver implements completion.Observer: a failover is not a request of its own.
func (c *Counter) FailedOver(context.Context, completion.Failover) {}

// Finished implements completion.Observer: it counts the request by its surface and whether a
// model's answer was served.
func (c *Counter) Finished(_ context.Context, o completion.Outcome) {
	s, out := OpenAI, Served
	for i, name := range surfaceNames {
		if name == o.Surface {
			s = Surface(i)
		}
	}
	if o.Err != nil {
		out = Failed
	}
	c.Add(c.now(), s, out)
}

// take empties the slots and retired counts into minute and hour buckets, with what a failed
// flush left, oldest first.
func (c *Counter) take() []Bucket {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.slots {
		c.retire(&c.slots[i])
	}
	add := func(k bucketKey, n *Counts) {
		if p := c.pending[k]; p != nil {
			p.Add(n)
			return
		}
		cp := *n
		c.pending[k] = &cp
	}
	for m, n := range c.retired {
		start := m * 60
		add(bucketKey{Minute, start}, n)
		add(bucketKey{Hour, start - start%3600}, n)
	}
	clear(c.retired)
	keys := slices.SortedFunc(maps.Keys(c.pending), func(a, b bucketKey) int {
		if a.res != b.res {
			return cmp.Compare(a.res, b.res)
		}
		return cmp.Compare(a.start, b.start)
	})
	bs := make([]Bucket, len(keys))
	for i, k := range keys {
		bs[i] = Bucket{Res: k.res, Start: time.Unix(k.start, 0).UTC(), N: *c.pending[k]}
	}
	clear(c.pending)
	return bs
}

// keep puts back buckets a flush could not add, for the next.
func (c *Counter) keep(bs []Bucket) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range bs {
		k := bucketKey{b.Res, b.Start.Unix()}
		if p := c.pending[k]; p != nil {
			p.Add(&b.N)
		} else {
			n := b.N
			c.pending[k] = &n
		}
	}
}

// Flush adds everything counted so far to st: nothing when nothing was counted. Buckets st did
// not add are kept for the next flush (a *PartialError says which; any other error, all).
func (c *Counter) Flush(ctx context.Context, st Store) error {
	c.flushing.Lock()
	defer c.flushing.Unlock()
	c.lastFlush.Store(c.now().UnixNano())
	bs := c.take()
	if len(bs) == 0 {
		return nil
	}
	err := st.AddRequestStats(ctx, bs)
	if err == nil {
		return nil
	}
	if p, ok := err.(*PartialError); ok {
		c.keep(p.Failed)
	} else {
		c.keep(bs)
	}
	return err
}

// FlushIfDue flushes when the flush interval has passed since the last flush: a Lambda function
// calls it after each answer, as nothing runs while the instance is frozen between invocations.
func (c *Counter) FlushIfDue(ctx context.Context, st Store) error {
	if c.now().UnixNano()-c.lastFlush.Load() < int64(c.interval) {
		return nil
	}
	return c.Flush(ctx, st)
}

// FlushEvery flushes every interval until ctx ends, then once more (the local server's shutdown
// keeps its last counts). A failed flush is logged; its counts wait for the next.
func (c *Counter) FlushEvery(ctx context.Context, st Store, log *slog.Logger) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := c.Flush(context.WithoutCancel(ctx), st); err != nil {
				log.Warn("request stats: the last flush failed", "error", err)
			}
			return
		case <-t.C:
			if err := c.Flush(ctx, st); err != nil {
				log.Warn("request stats: flush failed; retried at the next", "error", err)
			}
		}
	}
}
