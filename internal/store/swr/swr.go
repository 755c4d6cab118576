// Package swr is the read cache the warm caches share (API keys, circuit breakers, provider
// health): bounded, in memory, one load per key however many callers want it, and
// stale-while-revalidate. A value is served as it is for the first half of its maximum age; in the
// second half it is still served at once while one background load replaces it, so a caller that
// keeps using a value never waits on the store for it. Only a value never read, or past its
// maximum age, is waited for: the maximum age is the promise made to whoever changes the stored
// value ("seen within MaxAge"), so a value is never served past it. A failed background load keeps
// the old value until then; after it, callers wait on a new load and see its error. Keys missing
// together load together: one call of the Loader for all of a Get's missing and stale keys.
// Prefetch starts that load without waiting, so a read can run beside a request's other work and
// a Get find it done. It knows nothing of what it caches.
package swr

import (
	"context"
	"sync"
	"time"
)

// Loader reads keys from the store, in one call where the store can. A key the answer leaves
// out is V's zero value; an error fails every caller waiting on the load and stores nothing.
type Loader[K comparable, V any] func(ctx context.Context, keys []K) (map[K]V, error)

// Options tune a Cache. MaxAge is required; other zero fields take the defaults.
type Options[V any] struct {
	// MaxAge is how long v may be served after the load that read it began; past half of it a
	// Get serves v and starts a background load. 0 or less: v is not kept.
	MaxAge func(v V) time.Duration
	// Negative, when set, marks the values kept apart (a "not found"): each kind holds at most
	// MaxEntries, so a flood of negative answers cannot evict positive ones.
	Negative func(v V) bool
	// MaxEntries bounds each kind; past it an arbitrary entry of that kind goes. Default 10 000.
	MaxEntries int
	// Timeout bounds a load, which runs detached from its callers' cancellation (the first caller
	// giving up must not fail the others, and a background load has no caller). A load older than
	// this (its instance was frozen mid-load) is not waited on: a new one replaces it. Default 10 s.
	Timeout time.Duration
	Now     func() time.Time // default time.Now
}

// Defaults of Options.
const (
	DefaultMaxEntries = 10_000
	DefaultTimeout    = 10 * time.Second
)

// Cache is a concurrency-safe cache over a Loader. Build it with New.
type Cache[K comparable, V any] struct {
	load Loader[K, V]
	opt  Options[V]

	mu      sync.Mutex
	entries [2]map[K]entry[V] // positive, negative
	flights map[K]*flight[K, V]
}

type entry[V any] struct {
	v                V
	refresh, expires time.Time
}

// flight is one call of the Loader; every key it reads points at it while it runs.
type flight[K comparable, V any] struct {
	started time.Time
	done    chan struct{} // closed once vals and err are set
	vals    map[K]V
	err     error
}

// New returns an empty cache over load.
func New[K comparable, V any](load Loader[K, V], opt Options[V]) *Cache[K, V] {
	if opt.MaxEntries <= 0 {
		opt.MaxEntries = DefaultMaxEntries
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Cache[K, V]{load: load, opt: opt, entries: [2]map[K]entry[V]{{}, {}}, flights: map[K]*flight[K, V]{}}
}

// Get returns the values of keys (distinct), in their order. It waits only for keys it holds no
// servable value of, under ctx: a caller that gives up returns ctx's error at once, and the load
// goes on for the others.
func (c *Cache[K, V]) Get(ctx context.Context, keys ...K) ([]V, error) {
	out := make([]V, len(keys))
	waits := c.lookup(ctx, keys, out)
	for _, w := range waits {
		select {
		case <-w.f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if w.f.err != nil {
			return nil, w.f.err
		}
		out[w.i] = w.f.vals[keys[w.i]]
	}
	return out, nil
}

// Prefetch starts, in one background load, what a Get of keys (distinct) would load — the keys
// held stale or not at all that nobody is loading yet — and returns without waiting, so a Get
// soon after finds them loaded or joins the load.
func (c *Cache[K, V]) Prefetch(ctx context.Context, keys ...K) {
	c.lookup(ctx, keys, nil)
}

// wait is a key of a Get (its index) waiting for a load.
type wait[K comparable, V any] struct {
	i int
	f *flight[K, V]
}

// lookup puts in out (when not nil) the servable values of keys, starts one load of the keys
// held stale or not at all that nobody is loading yet, and returns the keys that must wait.
func (c *Cache[K, V]) lookup(ctx context.Context, keys []K, out []V) []wait[K, V] {
	var waits []wait[K, V]
	var load []K      // missing and stale keys nobody is loading yet
	var waitNew []int // indexes of keys waiting on that load
	now := c.opt.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range keys {
		if e, ok := c.find(k); ok {
			if now.Before(e.expires) {
				if out != nil {
					out[i] = e.v
				}
				if !now.Before(e.refresh) && c.flying(k, now) == nil {
					load = append(load, k)
				}
				continue
			}
			c.drop(k)
		}
		if f := c.flying(k, now); f != nil {
			waits = append(waits, wait[K, V]{i, f})
			continue
		}
		load = append(load, k)
		waitNew = append(waitNew, i)
	}
	if len(load) > 0 {
		f := c.start(ctx, load, now)
		for _, i := range waitNew {
			waits = append(waits, wait[K, V]{i, f})
		}
	}
	return waits
}

// Set stores v for k as read now: a change made by this process, in force here at once. A load
// of k already running stores nothing (its answer may predate the change).
func (c *Cache[K, V]) Set(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.flights, k)
	c.put(k, v, c.opt.Now())
}

// Forget drops k, so the next Get loads it; a load of k already running stores nothing.
func (c *Cache[K, V]) Forget(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.flights, k)
	c.drop(k)
}

// start runs one load of keys in the background, detached from ctx's cancellation but keeping
// its values (trace, request id). c.mu is held.
func (c *Cache[K, V]) start(ctx context.Context, keys []K, now time.Time) *flight[K, V] {
	f := &flight[K, V]{started: now, done: make(chan struct{})}
	for _, k := range keys {
		c.flights[k] = f
	}
	go func() {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opt.Timeout)
		defer cancel()
		vals, err := c.load(lctx, keys)
		c.mu.Lock()
		f.vals, f.err = vals, err
		for _, k := range keys {
			if c.flights[k] != f {
				continue // set, forgotten or replaced while loading
			}
			delete(c.flights, k)
			if err == nil {
				c.put(k, vals[k], f.started)
			}
		}
		c.mu.Unlock()
		close(f.done)
	}()
	return f
}

// flying returns the live load of k, if any. c.mu is held.
func (c *Cache[K, V]) flying(k K, now time.Time) *flight[K, V] {
	if f := c.flights[k]; f != nil && now.Sub(f.started) < c.opt.Timeout {
		return f
	}
	return nil
}

func (c *Cache[K, V]) find(k K) (entry[V], bool) {
	for _, m := range c.entries {
		if e, ok := m[k]; ok {
			return e, true
		}
	}
	return entry[V]{}, false
}

func (c *Cache[K, V]) drop(k K) {
	for _, m := range c.entries {
		delete(m, k)
	}
}

// put stores v, read by a load that began at loaded. c.mu is held.
func (c *Cache[K, V]) put(k K, v V, loaded time.Time) {
	c.drop(k)
	age := c.opt.MaxAge(v)
	if age <= 0 {
		return
	}
	kind := 0
	if c.opt.Negative != nil && c.opt.Negative(v) {
		kind = 1
	}
	m := c.entries[kind]
	// Evict an arbitrary entry (Go randomises map iteration) when full: O(1), no bookkeeping per
	// hit, and nobody can predict which entry goes.
	for old := range m {
		if len(m) < c.opt.MaxEntries {
			break
		}
		delete(m, old)
	}
	m[k] = entry[V]{v: v, refresh: loaded.Add(age / 2), expires: loaded.Add(age)}
}
