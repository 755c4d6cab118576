package verify

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ReplayCache remembers spent token ids. A fleet of model servers behind one audience shares one
// (Redis SET NX with expiry, a DynamoDB conditional put); a single server can use the memory one.
type ReplayCache interface {
	// Use records jti as spent until expiry and reports whether it was unspent.
	Use(ctx context.Context, jti string, expiry time.Time) (fresh bool, err error)
}

// ErrReplayCacheFull is a memory cache holding max unexpired ids: it refuses rather than forget
// one, because forgetting would let that token be replayed.
var ErrReplayCacheFull = errors.New("verify: replay cache full")

// MemoryReplayCache is an in-process ReplayCache. Ids are kept until their token expires (tokens
// live about a minute), at most max at once.
type MemoryReplayCache struct {
	mu   sync.Mutex
	max  int
	seen map[string]time.Time
	now  func() time.Time
}

// NewMemoryReplayCache returns a cache of at most max ids (0: 100,000).
func NewMemoryReplayCache(max int) *MemoryReplayCache {
	if max <= 0 {
		max = 100_000
	}
	return &MemoryReplayCache{max: max, seen: map[string]time.Time{}, now: time.Now}
}

// Use implements ReplayCache.
func (c *MemoryReplayCache) Use(_ context.Context, jti string, expiry time.Time) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if exp, ok := c.seen[jti]; ok && now.Before(exp) {
		return false, nil
	}
	if len(c.seen) >= c.max {
		for id, exp := range c.seen {
			if !now.Before(exp) {
				delete(c.seen, id)
			}
		}
		if len(c.seen) >= c.max {
			return false, ErrReplayCacheFull
		}
	}
	c.seen[jti] = expiry
	return true, nil
}
