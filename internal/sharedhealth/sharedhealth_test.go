package sharedhealth_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/sharedhealth"
)

// memStore is a sharedhealth.Store in memory that counts reads and can hold writes at a gate.
type memStore struct {
	mu      sync.Mutex
	reports map[[2]string]sharedhealth.Report
	reads   [][]string
	writes  int
	readErr error
	gate    chan struct{} // when set, writes wait for it to close
}

func newMemStore() *memStore { return &memStore{reports: map[[2]string]sharedhealth.Report{}} }

func (m *memStore) hold() {
	if m.gate != nil {
		<-m.gate
	}
}

func (m *memStore) PutHealth(_ context.Context, r sharedhealth.Report) error {
	m.hold()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	m.reports[[2]string{r.Key, r.Env}] = r
	return nil
}

func (m *memStore) DeleteHealth(_ context.Context, key, env string) error {
	m.hold()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	delete(m.reports, [2]string{key, env})
	return nil
}

func (m *memStore) Health(_ context.Context, keys []string, now time.Time) (map[string][]sharedhealth.Report, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads = append(m.reads, slices.Clone(keys))
	if m.readErr != nil {
		return nil, m.readErr
	}
	out := map[string][]sharedhealth.Report{}
	for _, r := range m.reports {
		if slices.Contains(keys, r.Key) && r.Expires.After(now) {
			out[r.Key] = append(out[r.Key], r)
		}
	}
	return out, nil
}

func (m *memStore) stored(key, env string) (sharedhealth.Report, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.reports[[2]string{key, env}]
	return r, ok
}

func (m *memStore) counts() (reads, writes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reads), m.writes
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

func report(fails int, until time.Duration) chain.HealthReport {
	r := chain.HealthReport{Fails: fails, Last: t0, Expires: t0.Add(time.Minute)}
	if until > 0 {
		r.Until = t0.Add(until)
	}
	return r
}

// Publishing never waits for the store: the write runs in the background, Flush waits for it,
// reports published meanwhile are written together afterwards (each key's latest only), and a
// zero report withdraws the process's report.
func TestPublishWritesInTheBackground(t *testing.T) {
	st := newMemStore()
	st.gate = make(chan struct{})
	s := sharedhealth.New(st, sharedhealth.Options{Env: "env-a"})
	ctx := context.Background()

	start := time.Now()
	s.Publish(ctx, "m", report(1, 0))
	s.Publish(ctx, "m", report(2, 0)) // while the first write is held
	s.Publish(ctx, "m", report(3, 30*time.Second))
	s.Publish(ctx, "n", report(1, 0))
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Fatalf("Publish waited %v for the store", d)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := s.Flush(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush returned %v while a write was held", err)
	}
	close(st.gate)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := st.stored("m", "env-a"); r.Fails != 3 || r.Until.IsZero() {
		t.Errorf("stored %+v, want the latest report", r)
	}
	if _, ok := st.stored("n", "env-a"); !ok {
		t.Error("the report of n was not written")
	}
	if _, writes := st.counts(); writes > 3 {
		t.Errorf("%d writes for two keys: the reports published during a write were not coalesced", writes)
	}
	s.Publish(ctx, "m", chain.HealthReport{})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.stored("m", "env-a"); ok {
		t.Error("a zero report did not withdraw the stored one")
	}
	if err := s.Flush(ctx); err != nil {
		t.Errorf("Flush with nothing pending: %v", err)
	}
}

// Peers are the other processes' reports, read through the cache: one read per key however many
// requests ask within half of CacheTTL, a background renewal after it (the old reports served at
// once meanwhile), and a read waited for only once CacheTTL has passed.
func TestPeersReadThroughTheCache(t *testing.T) {
	st := newMemStore()
	c := &clock{t: t0}
	a := sharedhealth.New(st, sharedhealth.Options{Env: "env-a", Now: c.Now, CacheTTL: 4 * time.Second})
	b := sharedhealth.New(st, sharedhealth.Options{Env: "env-b", Now: c.Now, CacheTTL: 4 * time.Second})
	ctx := context.Background()
	a.Publish(ctx, "m", report(3, 30*time.Second))
	b.Publish(ctx, "m", report(1, 0))
	_ = a.Flush(ctx)
	_ = b.Flush(ctx)

	got := b.Peers(ctx, "m")
	if len(got) != 1 || got[0].Fails != 3 {
		t.Fatalf("b's peers %+v, want a's report alone", got)
	}
	for range 5 {
		b.Peers(ctx, "m")
	}
	if reads, _ := st.counts(); reads != 1 {
		t.Errorf("%d reads within half of the TTL, want 1", reads)
	}
	a.Publish(ctx, "m", chain.HealthReport{}) // a recovers
	_ = a.Flush(ctx)
	c.Advance(2 * time.Second)
	if got := b.Peers(ctx, "m"); len(got) != 1 {
		t.Errorf("past half the TTL the old reports are served at once, got %+v", got)
	}
	waitFor(t, func() bool { reads, _ := st.counts(); return reads == 2 })
	waitFor(t, func() bool { return len(b.Peers(ctx, "m")) == 0 })
}

// Prefetch starts the read that Peers then joins: one read for the request, and Peers finds it
// done or waits for it rather than reading again.
func TestPrefetchIsJoinedByPeers(t *testing.T) {
	st := newMemStore()
	s := sharedhealth.New(st, sharedhealth.Options{Env: "env-b"})
	other := sharedhealth.New(st, sharedhealth.Options{Env: "env-a"})
	ctx := context.Background()
	other.Publish(ctx, "x", report(3, 30*time.Second))
	_ = other.Flush(ctx)
	s.Prefetch(ctx, []string{"x", "y"})
	if got := s.Peers(ctx, "x"); len(got) != 1 {
		t.Errorf("peers of x %+v", got)
	}
	if got := s.Peers(ctx, "y"); len(got) != 0 {
		t.Errorf("peers of y %+v", got)
	}
	if reads, _ := st.counts(); reads != 1 {
		t.Errorf("%d reads, want the prefetch's one", reads)
	}
}

// A store that cannot be read leaves requests to their own process's counts: no reports, a
// warning logged, no error to the chain — and the failed read is kept like an answer, so the
// requests that follow do not each wait on the failing store again.
func TestPeersWithoutTheStore(t *testing.T) {
	st := newMemStore()
	st.readErr = errors.New("table unavailable")
	var logs bytes.Buffer
	s := sharedhealth.New(st, sharedhealth.Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	for range 3 {
		if got := s.Peers(context.Background(), "m"); got != nil {
			t.Errorf("peers %+v from a failing store", got)
		}
	}
	if !bytes.Contains(logs.Bytes(), []byte("table unavailable")) {
		t.Errorf("the failure was not logged: %s", logs.String())
	}
	if reads, _ := st.counts(); reads != 1 {
		t.Errorf("%d reads of the failing store by three requests within the TTL, want 1", reads)
	}
}

// Two processes on one store, each with its own Health and cache: the second passes over the model
// the first saw fail, on its very first request.
func TestTwoProcessesShareWhatTheySee(t *testing.T) {
	st := newMemStore()
	p := chain.Plan{On: chain.AllTriggers, SkipUnhealthy: true, Targets: []chain.Target{
		{Model: "primary", Timeout: time.Second, FirstTokenTimeout: time.Second},
		{Model: "fallback", Timeout: time.Second, FirstTokenTimeout: time.Second}}}
	engine := func(env string) (chain.Engine, *sharedhealth.Shared) {
		h := chain.NewHealth(time.Now)
		s := sharedhealth.New(st, sharedhealth.Options{Env: env})
		h.Shared = s
		return chain.Engine{Health: h}, s
	}
	tried := func(e chain.Engine) []string {
		var calls []string
		e.Health.Prefetch(context.Background(), p)
		res, err := chain.Run(context.Background(), e, p, false, func(_ context.Context, t chain.Target) (string, error) {
			calls = append(calls, t.Model)
			if t.Model == "primary" {
				return "", serverError{}
			}
			return "ok", nil
		})
		if err != nil {
			t.Fatal(err)
		}
		res.Release()
		return calls
	}
	first, firstShared := engine("env-a")
	for range first.Health.Threshold {
		tried(first)
	}
	if err := firstShared.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	second, _ := engine("env-b")
	if got := tried(second); !slices.Equal(got, []string{"fallback"}) {
		t.Errorf("the second process tried %v", got)
	}
}

type serverError struct{}

func (serverError) Error() string                { return "500" }
func (serverError) FailoverReason() chain.Reason { return chain.ServerError }

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 2 s")
}
