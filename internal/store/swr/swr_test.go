package swr

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// store is a Loader over a map that records each call's keys and can hold calls at a gate.
type store struct {
	mu      sync.Mutex
	vals    map[string]int
	err     error
	calls   [][]string
	gate    chan struct{} // when set, loads wait for it to close
	entered chan []string // when set, receives each load's keys as it begins
}

func (s *store) load(ctx context.Context, keys []string) (map[string]int, error) {
	s.mu.Lock()
	s.calls = append(s.calls, slices.Clone(keys))
	gate, entered := s.gate, s.entered
	s.mu.Unlock()
	if entered != nil {
		entered <- keys
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	out := map[string]int{}
	for _, k := range keys {
		if v, ok := s.vals[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

func (s *store) set(f func(s *store)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *store) loads() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = start.Add(d)
}

var start = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

const maxAge = 10 * time.Second

// setup returns a cache whose values live maxAge and whose 0 is a negative answer.
func setup(t *testing.T) (*Cache[string, int], *store, *clock) {
	t.Helper()
	s := &store{vals: map[string]int{"a": 1, "b": 2, "c": 3}}
	clk := &clock{t: start}
	c := New(s.load, Options[int]{MaxAge: func(int) time.Duration { return maxAge }, Negative: func(v int) bool { return v == 0 }, Now: clk.now})
	return c, s, clk
}

// get fails the test instead of hanging when the cache waits on a held load it should not wait on.
func get(t *testing.T, c *Cache[string, int], keys ...string) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := c.Get(ctx, keys...)
	if err != nil {
		t.Fatalf("Get(%v): %v", keys, err)
	}
	return v
}

func wantLoads(t *testing.T, s *store, want ...[]string) {
	t.Helper()
	if got := s.loads(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("loads %v, want %v", got, want)
	}
}

func TestAFreshValueIsServedWithoutALoad(t *testing.T) {
	c, s, clk := setup(t)
	get(t, c, "a")
	clk.set(maxAge/2 - time.Nanosecond)
	if v := get(t, c, "a"); v[0] != 1 {
		t.Errorf("got %v", v)
	}
	wantLoads(t, s, []string{"a"})
}

// Past half its age a value is served at once — the refresh is held at a gate, so a caller that
// waited for it would never return — and refreshed by one load, whatever the number of callers.
func TestAStaleValueIsServedAtOnceAndRefreshedOnce(t *testing.T) {
	c, s, clk := setup(t)
	get(t, c, "a")
	s.set(func(s *store) { s.vals["a"], s.gate, s.entered = 10, make(chan struct{}), make(chan []string, 10) })
	clk.set(6 * time.Second)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if v := get(t, c, "a"); v[0] != 1 {
				t.Errorf("stale read %v, want the cached 1", v)
			}
		})
	}
	wg.Wait()
	<-s.entered
	close(s.gate)
	wantLoads(t, s, []string{"a"}, []string{"a"})

	// At 10 s the old value has expired and the refreshed one (read from 6 s) is fresh: served
	// from the cache, or by waiting on the refresh if it has not stored yet — never a third load.
	clk.set(maxAge)
	if v := get(t, c, "a"); v[0] != 10 {
		t.Errorf("after the refresh: %v, want 10", v)
	}
	wantLoads(t, s, []string{"a"}, []string{"a"})
}

func TestAFailedRefreshKeepsTheStaleValueUntilMaxAge(t *testing.T) {
	c, s, clk := setup(t)
	get(t, c, "a")
	boom := errors.New("throttled")
	s.set(func(s *store) { s.err = boom })
	for _, at := range []time.Duration{6 * time.Second, 8 * time.Second, maxAge - time.Nanosecond} {
		clk.set(at)
		if v := get(t, c, "a"); v[0] != 1 {
			t.Errorf("at %s: %v, want the stale 1", at, v)
		}
	}
	clk.set(maxAge)
	if _, err := c.Get(context.Background(), "a"); !errors.Is(err, boom) {
		t.Errorf("past MaxAge: err %v, want the store's error", err)
	}
	s.set(func(s *store) { s.err = nil })
	if v := get(t, c, "a"); v[0] != 1 {
		t.Errorf("after the store recovered: %v", v)
	}
}

func TestConcurrentMissesShareOneLoad(t *testing.T) {
	c, s, _ := setup(t)
	s.set(func(s *store) { s.gate, s.entered = make(chan struct{}), make(chan []string, 10) })
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if v := get(t, c, "a"); v[0] != 1 {
				t.Errorf("got %v", v)
			}
		})
	}
	<-s.entered
	close(s.gate)
	wg.Wait()
	// Exact even if a caller came after the load ended: it found the stored value.
	wantLoads(t, s, []string{"a"})
}

// One Get loads all it lacks in one call, stale keys included, and joins the loads running.
func TestOneLoadForAGetsMissingAndStaleKeys(t *testing.T) {
	c, s, clk := setup(t)
	get(t, c, "a")
	clk.set(6 * time.Second)
	if v := get(t, c, "a", "b"); !slices.Equal(v, []int{1, 2}) {
		t.Errorf("got %v", v)
	}
	wantLoads(t, s, []string{"a"}, []string{"a", "b"})

	s.set(func(s *store) { s.gate, s.entered = make(chan struct{}), make(chan []string, 10) })
	first, second := make(chan []int), make(chan []int)
	go func() { first <- get(t, c, "c") }()
	<-s.entered
	go func() { second <- get(t, c, "c", "d") }() // c is loading: only d is asked for
	<-s.entered
	close(s.gate)
	if a, b := <-first, <-second; !slices.Equal(a, []int{3}) || !slices.Equal(b, []int{3, 0}) {
		t.Errorf("got %v and %v", a, b)
	}
	wantLoads(t, s, []string{"a"}, []string{"a", "b"}, []string{"c"}, []string{"d"})
	if v := get(t, c, "d"); v[0] != 0 {
		t.Errorf("a key the store lacks: %v, want the zero value", v)
	}
	wantLoads(t, s, []string{"a"}, []string{"a", "b"}, []string{"c"}, []string{"d"})
}

// A change made here (Set) or announced here (Forget) while a load runs wins over that load's
// answer, which may predate it.
func TestSetAndForgetWinOverALoadInFlight(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Cache[string, int])
		want   int
		loads  int
	}{
		{"set", func(c *Cache[string, int]) { c.Set("a", 7) }, 7, 1},
		{"forget", func(c *Cache[string, int]) { c.Forget("a") }, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s, _ := setup(t)
			s.set(func(s *store) { s.gate, s.entered = make(chan struct{}), make(chan []string, 10) })
			done := make(chan struct{})
			go func() { defer close(done); get(t, c, "a") }()
			<-s.entered
			tc.change(c)
			close(s.gate)
			<-done
			if v := get(t, c, "a"); v[0] != tc.want {
				t.Errorf("got %v, want %d", v, tc.want)
			}
			if got := len(s.loads()); got != tc.loads {
				t.Errorf("%d loads, want %d", got, tc.loads)
			}
		})
	}
}

func TestACallerThatGivesUpDoesNotFailTheOthers(t *testing.T) {
	c, s, _ := setup(t)
	s.set(func(s *store) { s.gate, s.entered = make(chan struct{}), make(chan []string, 10) })
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := c.Get(ctx, "a"); first <- err }()
	<-s.entered
	second := make(chan []int, 1)
	go func() { second <- get(t, c, "a") }()
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v, want context.Canceled", err)
	}
	close(s.gate)
	if v := <-second; v[0] != 1 {
		t.Errorf("the other caller: %v", v)
	}
	wantLoads(t, s, []string{"a"})
}

// A load older than its timeout belongs to an instance frozen mid-load: it cannot succeed, so a
// caller starts another instead of waiting for its failure.
func TestALoadOlderThanItsTimeoutIsReplaced(t *testing.T) {
	c, s, clk := setup(t)
	s.set(func(s *store) { s.gate, s.entered = make(chan struct{}), make(chan []string, 10) })
	go func() { _, _ = c.Get(context.Background(), "a") }()
	<-s.entered
	clk.set(DefaultTimeout)
	done := make(chan []int, 1)
	go func() { done <- get(t, c, "a") }()
	<-s.entered
	close(s.gate)
	if v := <-done; v[0] != 1 {
		t.Errorf("got %v", v)
	}
	wantLoads(t, s, []string{"a"}, []string{"a"})
}

func TestErrorsAreNotKept(t *testing.T) {
	c, s, _ := setup(t)
	boom := errors.New("down")
	s.set(func(s *store) { s.err = boom })
	if _, err := c.Get(context.Background(), "a"); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	s.set(func(s *store) { s.err = nil })
	get(t, c, "a")
	wantLoads(t, s, []string{"a"}, []string{"a"})
}

func TestZeroMaxAgeKeepsNothing(t *testing.T) {
	s := &store{vals: map[string]int{"a": 1}}
	c := New(s.load, Options[int]{MaxAge: func(int) time.Duration { return 0 }})
	for range 3 {
		get(t, c, "a")
	}
	wantLoads(t, s, []string{"a"}, []string{"a"}, []string{"a"})
}

func TestNegativeAnswersCannotEvictPositiveOnes(t *testing.T) {
	c, s, _ := setup(t)
	c.opt.MaxEntries = 10
	get(t, c, "a")
	for i := range 100 {
		get(t, c, fmt.Sprintf("unknown-%d", i))
	}
	if n := len(c.entries[1]); n > 10 {
		t.Errorf("%d negative entries, want at most 10", n)
	}
	before := len(s.loads())
	get(t, c, "a")
	if len(s.loads()) != before {
		t.Error("negative answers evicted a positive one")
	}
	for i := range 20 {
		s.set(func(s *store) { s.vals[fmt.Sprint(i)] = i + 1 })
		get(t, c, fmt.Sprint(i))
	}
	if n := len(c.entries[0]); n > 10 {
		t.Errorf("%d positive entries, want at most 10", n)
	}
}

// Prefetch starts one load of the keys a Get would load — missing, and stale past half their age
// — without waiting for it (the load is held at a gate); a Get then joins that load, and a key
// fresh in the cache is not loaded again.
func TestPrefetchStartsTheLoadAGetJoins(t *testing.T) {
	c, s, clk := setup(t)
	get(t, c, "a")
	clk.set(time.Second)
	get(t, c, "c")
	clk.set(maxAge / 2) // a is stale, c fresh, b never read
	gate, entered := make(chan struct{}), make(chan []string, 1)
	s.set(func(s *store) { s.gate, s.entered = gate, entered })
	c.Prefetch(context.Background(), "a", "b", "c")
	if keys := <-entered; !slices.Equal(keys, []string{"a", "b"}) {
		t.Fatalf("prefetch loaded %v, want [a b]", keys)
	}
	done := make(chan []int)
	go func() { done <- get(t, c, "a", "b", "c") }()
	close(gate)
	if v := <-done; !slices.Equal(v, []int{1, 2, 3}) {
		t.Errorf("got %v", v)
	}
	wantLoads(t, s, []string{"a"}, []string{"c"}, []string{"a", "b"})
}
