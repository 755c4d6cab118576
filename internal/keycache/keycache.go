// Package keycache keeps API key lookups in memory for the life of a warm Lambda or of the local
// server, so most authenticated requests skip the key store (locally: a bbolt read and a JSON
// decode per request). It decorates any identity.KeyFinder and knows nothing of HTTP. The process that changes
// a key calls Invalidate, so locally an admin change takes effect on the next request; other warm
// Lambdas see it within the TTL.
package keycache

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/identity"
	"golang.org/x/sync/singleflight"
)

const (
	// DefaultTTL is how long a found key is trusted when SECUREAI_KEY_CACHE_TTL is unset. It is
	// also the longest a revocation can take to reach a warm instance.
	DefaultTTL = 30 * time.Second
	// MaxNegativeTTL caps how long an unknown hash is remembered: long enough that a flood of
	// random keys costs one store read per hash per few seconds, short enough that a key created
	// on another instance works here almost at once.
	MaxNegativeTTL = 5 * time.Second
	// MaxEntries bounds found and unknown entries each, so memory stays small under any load and
	// unknown hashes can never push out real keys.
	MaxEntries = 10_000
	// lookupTimeout bounds a shared store read, which runs detached from any one caller's
	// cancellation so that the first caller giving up does not fail the others.
	lookupTimeout = 10 * time.Second
)

// Cache is a concurrency-safe, bounded KeyFinder cache with per-hash request coalescing.
type Cache struct {
	inner  identity.KeyFinder
	ttl    time.Duration
	negTTL time.Duration
	now    func() time.Time
	max    int

	flights singleflight.Group

	mu      sync.Mutex
	found   map[string]foundEntry
	unknown map[string]time.Time // hash → when the "not found" answer expires
	epoch   uint64               // bumped by Invalidate, so a lookup begun before it stores nothing
}

type foundEntry struct {
	key     *apikey.Key
	expires time.Time
}

// New caches inner's answers: found keys for ttl, unknown hashes for min(ttl, MaxNegativeTTL).
// A ttl of zero or less disables caching (every call goes to inner). now is the clock (time.Now
// outside tests).
func New(inner identity.KeyFinder, ttl time.Duration, now func() time.Time) *Cache {
	return &Cache{
		inner: inner, ttl: ttl, negTTL: min(ttl, MaxNegativeTTL), now: now, max: MaxEntries,
		found: make(map[string]foundEntry), unknown: make(map[string]time.Time),
	}
}

// KeyByHash implements identity.KeyFinder. Each caller gets its own copy of the key. Errors other
// than apikey.ErrNotFound are never cached, so a store hiccup does not lock a key out.
func (c *Cache) KeyByHash(ctx context.Context, hash string) (*apikey.Key, error) {
	if c.ttl <= 0 {
		return c.inner.KeyByHash(ctx, hash)
	}
	if k, err, ok := c.cached(hash); ok {
		return k, err
	}
	ch := c.flights.DoChan(hash, func() (any, error) {
		// A flight that finished just before this one began may have filled the cache.
		if k, err, ok := c.cached(hash); ok {
			return k, err
		}
		c.mu.Lock()
		epoch := c.epoch
		c.mu.Unlock()
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		k, err := c.inner.KeyByHash(lctx, hash)
		c.store(hash, epoch, k, err)
		return k, err
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*apikey.Key).Clone(), nil
	}
}

// Invalidate forgets what is known about hash, so the next lookup asks the store. Code that
// changes a key on this instance (an admin update or revoke) calls it.
func (c *Cache) Invalidate(hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.found, hash)
	delete(c.unknown, hash)
	c.epoch++
	c.flights.Forget(hash)
}

// cached answers from memory: ok is false on a miss (or an expired entry, which it drops).
func (c *Cache) cached(hash string) (*apikey.Key, error, bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, hit := c.found[hash]; hit {
		if now.Before(e.expires) {
			return e.key.Clone(), nil, true
		}
		delete(c.found, hash)
	}
	if until, hit := c.unknown[hash]; hit {
		if now.Before(until) {
			return nil, apikey.ErrNotFound, true
		}
		delete(c.unknown, hash)
	}
	return nil, nil, false
}

func (c *Cache) store(hash string, epoch uint64, k *apikey.Key, err error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch {
		return // invalidated while reading: the answer may predate the change
	}
	switch {
	case err == nil:
		delete(c.unknown, hash)
		makeRoom(c.found, c.max)
		c.found[hash] = foundEntry{key: k.Clone(), expires: now.Add(c.ttl)}
	case errors.Is(err, apikey.ErrNotFound):
		makeRoom(c.unknown, c.max)
		c.unknown[hash] = now.Add(c.negTTL)
	}
}

// makeRoom evicts an arbitrary entry (Go randomises map iteration) when m is full: O(1), with no
// bookkeeping per hit, and an attacker cannot predict which entry goes.
func makeRoom[V any](m map[string]V, limit int) {
	for k := range m {
		if len(m) < limit {
			return
		}
		delete(m, k)
	}
}
