package breaker_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type audit struct {
	mu     sync.Mutex
	events []breaker.Event
}

func (a *audit) record(_ context.Context, e breaker.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, e)
}

func (a *audit) actions() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, e := range a.events {
		out = append(out, e.Action+" by "+e.Actor)
	}
	return strings.Join(out, ", ")
}

func newStore(t *testing.T) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "gateway.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var (
	start = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	key   = &apikey.Key{ID: "key_1", UserID: "u1"}
	other = &apikey.Key{ID: "key_2", UserID: "u2"}
)

func circuitOpen(t *testing.T, err error) *fault.Error {
	t.Helper()
	var f *fault.Error
	if !errors.As(err, &f) || f.K != fault.CircuitOpen || f.Code != "circuit_open" {
		t.Fatalf("err = %v, want a CircuitOpen fault", err)
	}
	return f
}

func TestAdminOpenBlocksUntilClosed(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: start}
	aud := &audit{}
	b := breaker.New(newStore(t), breaker.Config{Now: clk.Now}, aud.record)
	if err := b.Check(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(ctx, breaker.State{Subject: breaker.Subject{Kind: breaker.KindUser, ID: "u1"}, Reason: "investigation", OpenedBy: "admin:key_ops"}); err != nil {
		t.Fatal(err)
	}
	f := circuitOpen(t, b.Check(ctx, key))
	if f.RetryAfter != 0 || !strings.Contains(f.Message, "user u1") || !strings.Contains(f.Message, "investigation") || !strings.Contains(f.Message, "until an admin closes it") {
		t.Errorf("message %q, Retry-After %s", f.Message, f.RetryAfter)
	}
	if err := b.Check(ctx, other); err != nil {
		t.Errorf("another user's key was blocked: %v", err)
	}
	if _, err := b.Close(ctx, breaker.Subject{Kind: breaker.KindUser, ID: "u1"}, "admin:key_ops"); err != nil {
		t.Fatal(err)
	}
	if err := b.Check(ctx, key); err != nil {
		t.Errorf("still blocked after close: %v", err)
	}
	if _, err := b.Close(ctx, breaker.Subject{Kind: breaker.KindUser, ID: "u1"}, "admin:key_ops"); !errors.Is(err, breaker.ErrNotOpen) || fault.KindOf(err) != fault.NotFound {
		t.Errorf("closing a closed breaker: %v", err)
	}
	if got := aud.actions(); got != "open by admin:key_ops, close by admin:key_ops" {
		t.Errorf("audit: %s", got)
	}
}

func TestViolationsOpenAutomaticallyAndCooldownCloses(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: start}
	aud := &audit{}
	cfg := breaker.Config{Threshold: 3, Window: 10 * time.Minute, Cooldown: 15 * time.Minute, Now: clk.Now}
	b := breaker.New(newStore(t), cfg, aud.record)
	for i := range 3 {
		if err := b.Check(ctx, key); err != nil {
			t.Fatalf("blocked after %d violations: %v", i, err)
		}
		if err := b.RecordViolation(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	f := circuitOpen(t, b.Check(ctx, key))
	if f.RetryAfter != 15*time.Minute || !strings.Contains(f.Message, "API key key_1") || !strings.Contains(f.Message, "policy violations") {
		t.Errorf("message %q, Retry-After %s", f.Message, f.RetryAfter)
	}
	clk.Advance(10 * time.Minute)
	if f := circuitOpen(t, b.Check(ctx, key)); f.RetryAfter != 5*time.Minute {
		t.Errorf("Retry-After %s, want the remaining 5m", f.RetryAfter)
	}
	clk.Advance(5 * time.Minute)
	if err := b.Check(ctx, key); err != nil {
		t.Errorf("still blocked after the cooldown: %v", err)
	}
	// Opened for the key and for its user (both reached 3), each closed once by the cooldown.
	if got := aud.actions(); got != "open by auto, open by auto, close by cooldown, close by cooldown" {
		t.Errorf("audit: %s", got)
	}
}

func TestViolationsInAnotherWindowDoNotAddUp(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: start}
	b := breaker.New(newStore(t), breaker.Config{Threshold: 2, Window: time.Minute, Now: clk.Now}, nil)
	_ = b.RecordViolation(ctx, key)
	clk.Advance(time.Minute)
	_ = b.RecordViolation(ctx, key)
	if err := b.Check(ctx, key); err != nil {
		t.Errorf("violations in two windows opened the breaker: %v", err)
	}
}

// TestWarmInstanceSeesAnOpenWithinCacheTTL: instance A has checked (and cached) the key; instance
// B opens its breaker. A keeps admitting for less than CacheTTL and refuses from then on.
func TestWarmInstanceSeesAnOpenWithinCacheTTL(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	clk := &clock{t: start}
	a := breaker.New(store, breaker.Config{Now: clk.Now}, nil)
	b := breaker.New(store, breaker.Config{Now: clk.Now}, nil)
	if err := a.Check(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(ctx, breaker.State{Subject: breaker.Subject{Kind: breaker.KindKey, ID: key.ID}, OpenedBy: "admin:ops"}); err != nil {
		t.Fatal(err)
	}
	circuitOpen(t, b.Check(ctx, key)) // the opening instance knows at once
	clk.Advance(breaker.DefaultCacheTTL - time.Millisecond)
	if err := a.Check(ctx, key); err != nil {
		t.Fatalf("the cache was not used (A read the store before CacheTTL): %v", err)
	}
	clk.Advance(time.Millisecond)
	circuitOpen(t, a.Check(ctx, key))
}

// TestRacingViolationsOpenOnce: instances recording violations at once open each subject's
// breaker exactly once.
func TestRacingViolationsOpenOnce(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	clk := &clock{t: start}
	aud := &audit{}
	var wg sync.WaitGroup
	for range 4 {
		b := breaker.New(store, breaker.Config{Threshold: 5, Now: clk.Now}, aud.record)
		for range 5 {
			wg.Go(func() {
				if err := b.RecordViolation(ctx, key); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if got := aud.actions(); got != "open by auto, open by auto" {
		t.Errorf("audit: %s (want one open for the key and one for its user)", got)
	}
}

// batchStore is a Store that reads in batches (as DynamoDB does), recording each batch read and
// able to hold them at a gate; single reads are counted apart.
type batchStore struct {
	breaker.Store
	mu      sync.Mutex
	batches [][]breaker.Subject
	singles int
	gate    chan struct{} // when set, batch reads wait for it to close
	entered chan struct{} // when set, receives once per batch read as it begins
}

func (s *batchStore) Breakers(ctx context.Context, subjects []breaker.Subject) (map[breaker.Subject]breaker.State, error) {
	s.mu.Lock()
	s.batches = append(s.batches, append([]breaker.Subject(nil), subjects...))
	gate, entered := s.gate, s.entered
	s.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if gate != nil {
		<-gate
	}
	out := map[breaker.Subject]breaker.State{}
	for _, sub := range subjects {
		st, found, err := s.Store.Breaker(ctx, sub)
		if err != nil {
			return nil, err
		}
		if found {
			out[sub] = st
		}
	}
	return out, nil
}

func (s *batchStore) Breaker(ctx context.Context, sub breaker.Subject) (breaker.State, bool, error) {
	s.mu.Lock()
	s.singles++
	s.mu.Unlock()
	return s.Store.Breaker(ctx, sub)
}

func (s *batchStore) reads() (batches [][]breaker.Subject, singles int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]breaker.Subject(nil), s.batches...), s.singles
}

// TestAKeyAndItsUserAreReadInOneCall: a check reads both breakers through one batch read.
func TestAKeyAndItsUserAreReadInOneCall(t *testing.T) {
	store := &batchStore{Store: newStore(t)}
	b := breaker.New(store, breaker.Config{Now: (&clock{t: start}).Now}, nil)
	for range 3 {
		if err := b.Check(context.Background(), key); err != nil {
			t.Fatal(err)
		}
	}
	batches, singles := store.reads()
	want := []breaker.Subject{{Kind: breaker.KindKey, ID: "key_1"}, {Kind: breaker.KindUser, ID: "u1"}}
	if len(batches) != 1 || !slices.Equal(batches[0], want) || singles != 0 {
		t.Errorf("batch reads %v and %d single reads, want one batch %v", batches, singles, want)
	}
}

// TestAWarmCheckNeverWaitsOnTheStore: past half of CacheTTL a check answers from memory at once —
// the store's read is held at a gate, so a check that waited for it would not return — and one
// background read renews both entries, which brings an opening made elsewhere before CacheTTL.
func TestAWarmCheckNeverWaitsOnTheStore(t *testing.T) {
	ctx := context.Background()
	store := &batchStore{Store: newStore(t)}
	clk := &clock{t: start}
	a := breaker.New(store, breaker.Config{Now: clk.Now}, nil)
	if err := a.Check(ctx, key); err != nil {
		t.Fatal(err)
	}
	other := breaker.New(store.Store, breaker.Config{Now: clk.Now}, nil)
	if _, err := other.Open(ctx, breaker.State{Subject: breaker.Subject{Kind: breaker.KindUser, ID: "u1"}, OpenedBy: "admin:ops"}); err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	store.gate, store.entered = make(chan struct{}), make(chan struct{}, 10)
	store.mu.Unlock()
	clk.Advance(breaker.DefaultCacheTTL / 2)
	for range 5 {
		if err := a.Check(ctx, key); err != nil {
			t.Fatalf("a warm check: %v, want the cached answer at once", err)
		}
	}
	<-store.entered
	close(store.gate)
	if batches, _ := store.reads(); len(batches) != 2 {
		t.Errorf("%d batch reads, want the first and one renewal", len(batches))
	}
	// The first read has expired: the answer is the renewed one, stored or still being stored.
	clk.Advance(breaker.DefaultCacheTTL / 2)
	circuitOpen(t, a.Check(ctx, key))
}
