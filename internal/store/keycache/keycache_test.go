package keycache

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/chain"
)

// fakeStore is an in-memory KeyFinder that counts calls and can hold them at a gate.
type fakeStore struct {
	mu      sync.Mutex
	keys    map[string]*apikey.Key
	err     error         // returned instead of a lookup when set
	gate    chan struct{} // when set, lookups wait for it to close
	calls   atomic.Int32
	entered chan struct{} // receives once per call, when set
}

func (f *fakeStore) KeyByHash(ctx context.Context, hash string) (*apikey.Key, error) {
	f.calls.Add(1)
	if f.entered != nil {
		f.entered <- struct{}{}
	}
	if f.gate != nil {
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	k, ok := f.keys[hash]
	if !ok {
		return nil, apikey.ErrNotFound
	}
	c := *k
	return &c, nil
}

func (f *fakeStore) put(k *apikey.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys[k.Hash] = k
}

// clock is a manual clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

func setup(t *testing.T, ttl time.Duration) (*Cache, *fakeStore, *clock, *apikey.Key) {
	t.Helper()
	k := &apikey.Key{ID: "key_1", Hash: "h1", Name: "one", AllowedModels: []string{"demo/fast"},
		FailoverDefaults: &chain.Defaults{Models: []string{"demo/fast", "demo/slow"}, On: []chain.Reason{chain.Timeout}}}
	store := &fakeStore{keys: map[string]*apikey.Key{k.Hash: k}}
	clk := &clock{t: time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)}
	return New(store, ttl, clk.now), store, clk, k
}

func lookup(t *testing.T, c *Cache, hash string) (*apikey.Key, error) {
	t.Helper()
	return c.KeyByHash(context.Background(), hash)
}

func wantCalls(t *testing.T, f *fakeStore, n int32) {
	t.Helper()
	if got := f.calls.Load(); got != n {
		t.Errorf("store calls = %d, want %d", got, n)
	}
}

func TestHitAndExpiry(t *testing.T) {
	c, store, clk, want := setup(t, DefaultTTL)
	for range 3 {
		got, err := lookup(t, c, want.Hash)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("KeyByHash = %+v, %v; want %+v", got, err, want)
		}
	}
	wantCalls(t, store, 1)

	clk.advance(DefaultTTL/2 - time.Nanosecond) // fresh: not even a background read
	_, _ = lookup(t, c, want.Hash)
	wantCalls(t, store, 1)

	clk.advance(DefaultTTL/2 + time.Nanosecond) // exactly ttl after the read: expired, read again
	_, _ = lookup(t, c, want.Hash)
	wantCalls(t, store, 2)
}

// TestAKeyInUseNeverWaitsOnTheStore: past half the TTL the cached key is answered at once — the
// store's read is held at a gate, so a lookup that waited for it would not return — and one
// background read renews it, which brings a revocation made elsewhere before the TTL runs out.
func TestAKeyInUseNeverWaitsOnTheStore(t *testing.T) {
	c, store, clk, k := setup(t, DefaultTTL)
	_, _ = lookup(t, c, k.Hash)
	revoked := *k
	at := clk.now()
	revoked.RevokedAt = &at
	store.put(&revoked)
	store.gate, store.entered = make(chan struct{}), make(chan struct{}, 10)
	clk.advance(DefaultTTL / 2)
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := c.KeyByHash(ctx, k.Hash)
		cancel()
		if err != nil || got.RevokedAt != nil {
			t.Fatalf("a warm lookup: %+v, %v; want the cached key at once", got, err)
		}
	}
	<-store.entered
	close(store.gate)
	wantCalls(t, store, 2)

	// The first read has expired: the answer is the renewed key, stored or still being stored.
	clk.advance(DefaultTTL / 2)
	if got, _ := lookup(t, c, k.Hash); got.RevokedAt == nil {
		t.Fatal("the renewed key does not carry the revocation")
	}
}

// TestAFailedRenewalKeepsTheKeyUntilTheTTL: a store that fails past half the TTL does not lock a
// key out early; at the TTL the lookup reads the store itself and fails as it does.
func TestAFailedRenewalKeepsTheKeyUntilTheTTL(t *testing.T) {
	c, store, clk, k := setup(t, DefaultTTL)
	_, _ = lookup(t, c, k.Hash)
	boom := errors.New("throttled")
	store.mu.Lock()
	store.err = boom
	store.mu.Unlock()
	clk.advance(DefaultTTL - time.Nanosecond)
	if got, err := lookup(t, c, k.Hash); err != nil || got.ID != k.ID {
		t.Fatalf("before the TTL: %+v, %v; want the cached key", got, err)
	}
	clk.advance(time.Nanosecond)
	if _, err := lookup(t, c, k.Hash); !errors.Is(err, boom) {
		t.Fatalf("at the TTL: err = %v, want the store's error", err)
	}
}

// TestRevocationVisibleAfterTTL: a change in the store (here, a revocation) is served stale for
// at most the TTL.
func TestRevocationVisibleAfterTTL(t *testing.T) {
	c, store, clk, k := setup(t, DefaultTTL)
	_, _ = lookup(t, c, k.Hash)
	revoked := *k
	at := clk.now()
	revoked.RevokedAt = &at
	store.put(&revoked)
	if got, _ := lookup(t, c, k.Hash); got.RevokedAt != nil {
		t.Fatal("the cached key changed before its TTL ran out")
	}
	clk.advance(DefaultTTL)
	if got, _ := lookup(t, c, k.Hash); got.RevokedAt == nil {
		t.Fatal("revocation still unseen after the TTL")
	}
}

func TestNegativeCaching(t *testing.T) {
	c, store, clk, _ := setup(t, DefaultTTL)
	for range 5 {
		if _, err := lookup(t, c, "h-new"); !errors.Is(err, apikey.ErrNotFound) {
			t.Fatalf("unknown hash: err = %v, want apikey.ErrNotFound", err)
		}
	}
	wantCalls(t, store, 1)

	// The key is created elsewhere; it must work once the short negative TTL has passed.
	store.put(&apikey.Key{ID: "key_new", Hash: "h-new"})
	clk.advance(MaxNegativeTTL - time.Nanosecond)
	if _, err := lookup(t, c, "h-new"); !errors.Is(err, apikey.ErrNotFound) {
		t.Fatalf("within the negative TTL: err = %v, want the cached ErrNotFound", err)
	}
	clk.advance(time.Nanosecond)
	if got, err := lookup(t, c, "h-new"); err != nil || got.ID != "key_new" {
		t.Fatalf("after the negative TTL: %+v, %v; want the new key", got, err)
	}
	wantCalls(t, store, 2)
}

func TestNegativeTTLNeverExceedsTTL(t *testing.T) {
	store := &fakeStore{keys: map[string]*apikey.Key{}}
	clk := &clock{t: time.Unix(0, 0)}
	c := New(store, time.Second, clk.now)
	_, _ = lookup(t, c, "h")
	clk.advance(time.Second)
	_, _ = lookup(t, c, "h")
	wantCalls(t, store, 2)
}

func TestErrorsAreNotCached(t *testing.T) {
	c, store, _, k := setup(t, DefaultTTL)
	boom := errors.New("throttled")
	store.err = boom
	if _, err := lookup(t, c, k.Hash); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the store's error", err)
	}
	store.mu.Lock()
	store.err = nil
	store.mu.Unlock()
	if _, err := lookup(t, c, k.Hash); err != nil {
		t.Fatalf("after the store recovered: %v", err)
	}
	wantCalls(t, store, 2)
}

func TestZeroTTLDisablesCaching(t *testing.T) {
	c, store, _, k := setup(t, 0)
	for range 3 {
		_, _ = lookup(t, c, k.Hash)
		_, _ = lookup(t, c, "unknown")
	}
	wantCalls(t, store, 6)
}

func TestInvalidate(t *testing.T) {
	c, store, _, k := setup(t, DefaultTTL)
	_, _ = lookup(t, c, k.Hash)
	_, _ = lookup(t, c, "unknown")
	c.Invalidate(k.Hash)
	c.Invalidate("unknown")
	_, _ = lookup(t, c, k.Hash)
	_, _ = lookup(t, c, "unknown")
	wantCalls(t, store, 4)
}

// TestInvalidateDuringLookup: an answer read before an Invalidate may predate the change that
// caused it, so it must not be cached.
func TestInvalidateDuringLookup(t *testing.T) {
	c, store, _, k := setup(t, DefaultTTL)
	store.gate, store.entered = make(chan struct{}), make(chan struct{}, 1)
	done := make(chan struct{})
	go func() { defer close(done); _, _ = lookup(t, c, k.Hash) }()
	<-store.entered
	c.Invalidate(k.Hash)
	close(store.gate)
	<-done
	store.entered = nil
	_, _ = lookup(t, c, k.Hash)
	wantCalls(t, store, 2)
}

func TestConcurrentMissesShareOneLookup(t *testing.T) {
	c, store, _, k := setup(t, DefaultTTL)
	store.gate, store.entered = make(chan struct{}), make(chan struct{}, 100)
	const callers = 50
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			got, err := lookup(t, c, k.Hash)
			if err == nil && got.ID != k.ID {
				err = fmt.Errorf("got key %s", got.ID)
			}
			errs <- err
		})
	}
	<-store.entered
	time.Sleep(20 * time.Millisecond) // let the others queue behind the held lookup
	close(store.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	// Exact even if a caller arrived after the lookup finished: it finds the cached answer.
	wantCalls(t, store, 1)
}

// TestCallerCancellation: a caller that gives up returns at once, without failing the shared
// lookup that others are waiting on.
func TestCallerCancellation(t *testing.T) {
	c, store, _, k := setup(t, DefaultTTL)
	store.gate, store.entered = make(chan struct{}), make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := c.KeyByHash(ctx, k.Hash); first <- err }()
	<-store.entered
	second := make(chan error, 1)
	go func() { _, err := lookup(t, c, k.Hash); second <- err }()
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: err = %v, want context.Canceled", err)
	}
	close(store.gate)
	if err := <-second; err != nil {
		t.Fatalf("the other caller failed with the first one's cancellation: %v", err)
	}
	wantCalls(t, store, 1)
}

func TestCallersGetCopies(t *testing.T) {
	c, _, _, want := setup(t, DefaultTTL)
	snapshot := want.Clone()
	got, _ := lookup(t, c, want.Hash)
	got.Name, got.AllowedModels[0], got.FailoverDefaults.Models[0] = "x", "x", "x"
	if again, _ := lookup(t, c, want.Hash); !reflect.DeepEqual(again, snapshot) {
		t.Fatalf("a caller's change leaked into the cache: %+v", again)
	}
}

// TestUnknownHashesCannotEvictRealKeys: a flood of random keys fills the unknown entries, never
// the found ones.
func TestUnknownHashesCannotEvictRealKeys(t *testing.T) {
	c, store, _, k := setup(t, DefaultTTL)
	_, _ = lookup(t, c, k.Hash)
	for i := range MaxEntries + 100 {
		_, _ = lookup(t, c, fmt.Sprintf("random-%d", i))
	}
	calls := store.calls.Load()
	if _, err := lookup(t, c, k.Hash); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, store, calls)
}
