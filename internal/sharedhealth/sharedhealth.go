// Package sharedhealth shares provider health (chain.Health, skip_unhealthy) between the processes
// that serve the gateway — every warm Lambda environment in the cloud — through a store, so a model
// that fails for every environment is skipped by all of them within seconds instead of each one
// paying its own timeouts before it learns.
//
// Each process keeps one report per model (per deployment) it has seen fail: its failures since its
// last success, the latest of them, and the cool-down it opened. The report is written in the
// background the moment it changes — while the chain goes on to its next model, so no request waits
// for it — and withdrawn at the process's first success after them. Flush waits for the writes
// under way: a Lambda function calls it before its response ends (with the wait for its events),
// since nothing runs once the environment is frozen; by then the write, started at the failure, has
// almost always landed. A failed write is logged and not retried: the next change writes the whole
// report again, and every report expires on its own.
//
// The other processes' reports are read through a short cache (internal/store/swr), one key per
// model: a warm process reads a model's reports at most every CacheTTL/2, in the background; only
// a model it holds nothing fresh of is waited for — and the chain's Prefetch starts that read
// beside the request's checks and admission, so it has landed by the first attempt. A report is
// therefore seen by every process's requests that begin more than CacheTTL after it was written.
// What cannot be read is left out: health is advice, and a store outage must not stop a chain.
//
// The store keeps each report under (key, process). Contract: internal/testkit/storetest.RunHealth;
// the embedded store and the DynamoDB store implement it.
package sharedhealth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/store/swr"
)

// Report is one process's report of one model, as stored.
type Report struct {
	Key   string // the model, or the model and its deployment: chain.Health's key, opaque here
	Env   string // the process that wrote it
	Fails int    // its counted failures since its last success
	Last  time.Time
	Until time.Time // the end of the cool-down it opened; zero: none
	// Expires is when the report stops saying anything; the store may forget it then.
	Expires time.Time
}

// Store keeps the reports: internal/store/boltstore locally, internal/store/dynamostore in the
// cloud. Contract: internal/testkit/storetest.RunHealth.
type Store interface {
	// PutHealth stores r, replacing the report of the same Key and Env.
	PutHealth(ctx context.Context, r Report) error
	// DeleteHealth removes env's report of key, if any.
	DeleteHealth(ctx context.Context, key, env string) error
	// Health returns, by key, every report of keys that has not expired at now; a key without
	// one is absent.
	Health(ctx context.Context, keys []string, now time.Time) (map[string][]Report, error)
}

// Defaults of Options.
const (
	DefaultCacheTTL = 5 * time.Second
	DefaultTimeout  = 2 * time.Second
)

// Options tune a Shared. Zero fields take the defaults.
type Options struct {
	// CacheTTL is the longest a process serves the other processes' reports it read; past half
	// of it a request renews them in the background. Default 5 s.
	CacheTTL time.Duration
	// Timeout bounds each read and write of the store. Default 2 s.
	Timeout time.Duration
	// Env names this process in its reports; default a random id (a Lambda environment's is its
	// own, since each is a process).
	Env string
	Now func() time.Time // default time.Now
	Log *slog.Logger     // where failed reads and writes are told; default slog.Default()
}

// Shared is chain.SharedHealth over a Store. Build it with New, once per process; it is safe for
// concurrent use.
type Shared struct {
	store Store
	opt   Options
	cache *swr.Cache[string, []chain.HealthReport]

	mu      sync.Mutex
	pending map[string]chain.HealthReport // reports to write, the latest of each key
	wctx    context.Context               // the latest Publish's: its values (trace), not its end
	done    chan struct{}                 // closed when the writer stops; nil when none runs
}

var _ chain.SharedHealth = (*Shared)(nil)

// New returns a Shared over store.
func New(store Store, opt Options) *Shared {
	if opt.CacheTTL <= 0 {
		opt.CacheTTL = DefaultCacheTTL
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if opt.Env == "" {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
		opt.Env = hex.EncodeToString(b[:])
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	s := &Shared{store: store, opt: opt, pending: map[string]chain.HealthReport{}}
	ttl := opt.CacheTTL
	s.cache = swr.New(s.load, swr.Options[[]chain.HealthReport]{
		MaxAge:   func([]chain.HealthReport) time.Duration { return ttl },
		Negative: func(v []chain.HealthReport) bool { return len(v) == 0 },
		Timeout:  opt.Timeout,
		Now:      opt.Now,
	})
	return s
}

// Env is the name this process's reports go by.
func (s *Shared) Env() string { return s.opt.Env }

// Prefetch implements chain.SharedHealth: the read of keys starts now, in the background, unless
// the cache holds them fresh.
func (s *Shared) Prefetch(ctx context.Context, keys []string) {
	s.cache.Prefetch(ctx, keys...)
}

// Peers implements chain.SharedHealth: the other processes' reports of key as last read, waiting
// only when none fresh enough is held (for the read Prefetch started, or a new one); nothing when
// the request gives up waiting.
func (s *Shared) Peers(ctx context.Context, key string) []chain.HealthReport {
	v, err := s.cache.Get(ctx, key)
	if err != nil {
		return nil
	}
	return v[0]
}

// load reads keys' reports, leaving out this process's own. A store that cannot be read is
// logged and taken as no reports, kept like any answer: requests go by their own process's
// counts, and wait on the store at most once per CacheTTL while it fails.
func (s *Shared) load(ctx context.Context, keys []string) (map[string][]chain.HealthReport, error) {
	stored, err := s.store.Health(ctx, keys, s.opt.Now())
	if err != nil {
		s.opt.Log.Warn("shared health: reading the other instances' reports failed; requests go by this instance's own until the next read",
			"models", keys, "error", err)
		return nil, nil
	}
	out := make(map[string][]chain.HealthReport, len(stored))
	for key, rs := range stored {
		for _, r := range rs {
			if r.Env == s.opt.Env {
				continue
			}
			out[key] = append(out[key], chain.HealthReport{Fails: r.Fails, Last: r.Last, Until: r.Until, Expires: r.Expires})
		}
	}
	return out, nil
}

// Publish implements chain.SharedHealth: r becomes this process's report of key (a zero r
// withdraws it) in the background; reports published while a write runs are written together
// after it, each key's latest only.
func (s *Shared) Publish(ctx context.Context, key string, r chain.HealthReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending[key], s.wctx = r, ctx
	if s.done == nil {
		s.done = make(chan struct{})
		go s.write()
	}
}

// Flush waits until the reports published so far are written (or failed), or ctx ends.
func (s *Shared) Flush(ctx context.Context) error {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// write writes what is pending, round after round, until nothing is.
func (s *Shared) write() {
	for {
		s.mu.Lock()
		batch, ctx := s.pending, s.wctx
		if len(batch) == 0 {
			close(s.done)
			s.done, s.wctx = nil, nil
			s.mu.Unlock()
			return
		}
		s.pending = map[string]chain.HealthReport{}
		s.mu.Unlock()

		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.Timeout)
		var wg sync.WaitGroup
		for key, r := range batch {
			wg.Go(func() {
				if err := s.put(wctx, key, r); err != nil {
					s.opt.Log.Warn("shared health: writing this instance's report failed; the next change writes it again", "model", key, "error", err)
				}
			})
		}
		wg.Wait()
		cancel()
	}
}

func (s *Shared) put(ctx context.Context, key string, r chain.HealthReport) error {
	if r.Fails == 0 && r.Until.IsZero() {
		return s.store.DeleteHealth(ctx, key, s.opt.Env)
	}
	return s.store.PutHealth(ctx, Report{Key: key, Env: s.opt.Env, Fails: r.Fails, Last: r.Last, Until: r.Until, Expires: r.Expires})
}
