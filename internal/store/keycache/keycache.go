// Package keycache keeps API key lookups in memory for the life of a warm Lambda or of the local
// server, so most authenticated requests — and the re-reads before each attempt of a failover
// chain — skip the key store (locally: a bbolt read and a JSON decode per request). It decorates
// any identity.KeyFinder and knows nothing of HTTP.
//
// A key read is trusted for the TTL and never longer: the TTL is the longest a change made
// elsewhere (a revocation on another instance, in the store directly) takes to reach a warm
// instance, and what admins are told (KeyCacheTTL). Past half the TTL a lookup is still answered
// from memory at once while one background read renews the key (internal/store/swr), so a key in use
// never waits on the store; a failed renewal keeps the key until the TTL, after which a lookup
// reads the store itself and fails as the store does. The process that changes a key calls
// Invalidate, so locally an admin change takes effect on the next request.
package keycache

import (
	"context"
	"errors"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/store/swr"
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
)

// Cache is a concurrency-safe, bounded KeyFinder cache with per-hash request coalescing.
type Cache struct {
	keys *swr.Cache[string, *apikey.Key] // a nil key: the hash is unknown
}

// New caches inner's answers: found keys for ttl, unknown hashes for min(ttl, MaxNegativeTTL).
// A ttl of zero or less disables caching (every lookup reads inner; concurrent ones share the
// read). now is the clock (time.Now outside tests).
func New(inner identity.KeyFinder, ttl time.Duration, now func() time.Time) *Cache {
	negTTL := min(ttl, MaxNegativeTTL)
	load := func(ctx context.Context, hashes []string) (map[string]*apikey.Key, error) {
		out := make(map[string]*apikey.Key, len(hashes)) // one hash: KeyByHash asks for one
		for _, h := range hashes {
			k, err := inner.KeyByHash(ctx, h)
			switch {
			case errors.Is(err, apikey.ErrNotFound):
				out[h] = nil
			case err != nil:
				return nil, err // never cached, so a store hiccup does not lock a key out
			default:
				out[h] = k
			}
		}
		return out, nil
	}
	return &Cache{keys: swr.New(load, swr.Options[*apikey.Key]{
		MaxAge: func(k *apikey.Key) time.Duration {
			if k == nil {
				return negTTL
			}
			return ttl
		},
		Negative:   func(k *apikey.Key) bool { return k == nil },
		MaxEntries: MaxEntries,
		Now:        now,
	})}
}

// KeyByHash implements identity.KeyFinder. Each caller gets its own copy of the key. Errors other
// than apikey.ErrNotFound are never cached. A caller waiting on the store gives up when ctx ends,
// without failing the shared read others wait on.
func (c *Cache) KeyByHash(ctx context.Context, hash string) (*apikey.Key, error) {
	ks, err := c.keys.Get(ctx, hash)
	if err != nil {
		return nil, err
	}
	if ks[0] == nil {
		return nil, apikey.ErrNotFound
	}
	return ks[0].Clone(), nil
}

// Invalidate forgets what is known about hash, so the next lookup asks the store; a read already
// running is not kept (it may predate the change). Code that changes a key on this instance (an
// admin update or revoke) calls it.
func (c *Cache) Invalidate(hash string) { c.keys.Forget(hash) }
