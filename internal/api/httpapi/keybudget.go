package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// DefaultReadBudget is how many requests a minute one key may make to the routes that read
// (models, usage, policy-check, receipts): far above any client's need, far below a flood.
const DefaultReadBudget = 300

// maxBudgetKeys bounds the keys a KeyBudget remembers; past it the minute starts over.
const maxBudgetKeys = 10000

// KeyBudget gives each API key a number of requests per UTC minute on the routes it wraps, apart
// from the key's chat limits: those routes call no provider, but unbounded they let one key
// load the stores at will. It is per process (per warm instance in the cloud).
type KeyBudget struct {
	PerMinute int
	Now       func() time.Time // default time.Now

	mu     sync.Mutex
	minute time.Time
	counts map[string]int
}

// Wrap refuses, in render's envelope, a request over its key's budget with a 429 and Retry-After;
// it runs after Authenticate (a request without a key passes to the handler, which refuses it).
func (b *KeyBudget) Wrap(render Render, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if k := identity.Key(r.Context()); k != nil {
			if err := b.take(k.ID); err != nil {
				render(w, r, err)
				return
			}
		}
		h(w, r)
	}
}

func (b *KeyBudget) take(keyID string) error {
	now := time.Now()
	if b.Now != nil {
		now = b.Now()
	}
	minute := now.UTC().Truncate(time.Minute)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !minute.Equal(b.minute) || len(b.counts) >= maxBudgetKeys {
		b.minute, b.counts = minute, make(map[string]int)
	}
	if b.counts[keyID] >= b.PerMinute {
		reset := minute.Add(time.Minute)
		return fault.New(fault.RateLimited, "Rate limit exceeded: too many requests per minute",
			fmt.Sprintf("This API key may make %d requests a minute to /v1/models, /usage, /policy-check and /receipts (apart from its chat limits); the limit resets at %s",
				b.PerMinute, reset.Format(time.RFC3339))).
			WithCode("rate_limit_exceeded").WithRetryAfter(max(time.Second, time.Duration(math.Ceil(reset.Sub(now).Seconds()))*time.Second))
	}
	b.counts[keyID]++
	return nil
}
