package chain_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
)

// board is what every process's reports meet in (the store, here a map); each process sees it
// through its own view. It has no cache: internal/sharedhealth adds that.
type board struct {
	mu      sync.Mutex
	reports map[string]map[string]chain.HealthReport // key → process → report
	fetched [][]string
}

type view struct {
	b   *board
	env string
}

func (v view) Prefetch(_ context.Context, keys []string) {
	v.b.mu.Lock()
	v.b.fetched = append(v.b.fetched, keys)
	v.b.mu.Unlock()
}

func (v view) Peers(_ context.Context, key string) []chain.HealthReport {
	v.b.mu.Lock()
	defer v.b.mu.Unlock()
	var out []chain.HealthReport
	for env, r := range v.b.reports[key] {
		if env != v.env {
			out = append(out, r)
		}
	}
	return out
}

func (v view) Publish(_ context.Context, key string, r chain.HealthReport) {
	v.b.mu.Lock()
	defer v.b.mu.Unlock()
	if v.b.reports == nil {
		v.b.reports = map[string]map[string]chain.HealthReport{}
	}
	if v.b.reports[key] == nil {
		v.b.reports[key] = map[string]chain.HealthReport{}
	}
	if r == (chain.HealthReport{}) {
		delete(v.b.reports[key], v.env)
		return
	}
	v.b.reports[key][v.env] = r
}

func (b *board) report(key, env string) (chain.HealthReport, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.reports[key][env]
	return r, ok
}

// process is one gateway process (a Lambda environment) with its own Health on the board.
func process(b *board, env string, clock func() time.Time) *chain.Health {
	h := chain.NewHealth(clock)
	h.Shared = view{b, env}
	return h
}

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// runOn runs one request of p on h against the providers by.
func runOn(t *testing.T, h *chain.Health, p chain.Plan, by map[string]behavior) []chain.Attempt {
	t.Helper()
	f := newFake(by)
	e := f.engine()
	e.Health = h
	res, err := chain.Run(context.Background(), e, p, false, f.try)
	if err != nil {
		t.Fatal(err)
	}
	res.Release()
	return attempts(res.Report)
}

var skippedUnhealthy = chain.Attempt{Model: "primary", Status: chain.Skipped, Reason: chain.Unhealthy}

// A model one process has seen fail often enough is passed over by another process that never
// tried it, and tried again by both once the cool-down the first opened has ended.
func TestSharedHealthSkipsWhatAnotherProcessSawFail(t *testing.T) {
	clock := &testClock{now: time.Unix(1_000_000, 0)}
	b := &board{}
	first, second := process(b, "a", clock.Now), process(b, "b", clock.Now)
	p := plan(chain.AllTriggers, long, long, "primary", "fallback")
	p.SkipUnhealthy = true
	down := map[string]behavior{"primary": fail(chain.ServerError), "fallback": serve}
	for range first.Threshold {
		runOn(t, first, p, down)
	}
	r, ok := b.report("primary", "a")
	if !ok || r.Fails != first.Threshold || !r.Until.Equal(clock.Now().Add(first.Cooldown)) {
		t.Fatalf("the first process's report %+v (published %v), want %d failures and its cool-down", r, ok, first.Threshold)
	}
	if got := runOn(t, second, p, down); !reflect.DeepEqual(got, []chain.Attempt{skippedUnhealthy, served("fallback")}) {
		t.Errorf("the second process tried the model the first reported down: %+v", got)
	}
	clock.Advance(first.Cooldown)
	up := map[string]behavior{"primary": serve, "fallback": serve}
	if got := runOn(t, second, p, up); !reflect.DeepEqual(got, []chain.Attempt{served("primary")}) {
		t.Errorf("after the cool-down: %+v", got)
	}
}

// Failures seen by different processes add up: each saw fewer than the threshold, together they
// reach it, and every process passes the model over for a cool-down after the latest.
func TestSharedHealthAddsUpEveryProcessesFailures(t *testing.T) {
	clock := &testClock{now: time.Unix(1_000_000, 0)}
	b := &board{}
	hs := []*chain.Health{process(b, "a", clock.Now), process(b, "b", clock.Now), process(b, "c", clock.Now), process(b, "d", clock.Now)}
	p := plan(chain.AllTriggers, long, long, "primary", "fallback")
	p.SkipUnhealthy = true
	down := map[string]behavior{"primary": fail(chain.Timeout), "fallback": serve}
	for _, h := range hs[:3] {
		if got := runOn(t, h, p, down); !reflect.DeepEqual(got, []chain.Attempt{failed("primary", chain.Timeout), served("fallback")}) {
			t.Fatalf("before the threshold: %+v", got)
		}
		clock.Advance(time.Second)
	}
	for i, h := range hs {
		if got := runOn(t, h, p, down); !reflect.DeepEqual(got, []chain.Attempt{skippedUnhealthy, served("fallback")}) {
			t.Errorf("process %d: %+v", i, got)
		}
	}
	clock.Advance(hs[0].Cooldown)
	if got := runOn(t, hs[3], p, down); got[0].Status == chain.Skipped {
		t.Errorf("still skipped a cool-down after the latest failure: %+v", got)
	}
}

// A process's own success is newer news than the failures the others reported before it: once its
// probe has served, their old counts do not close the model again, while a report newer than the
// success still counts.
func TestSharedHealthOwnSuccessOutdatesOlderReports(t *testing.T) {
	clock := &testClock{now: time.Unix(1_000_000, 0)}
	b := &board{}
	first, second := process(b, "a", clock.Now), process(b, "b", clock.Now)
	p := plan(chain.AllTriggers, long, long, "primary", "fallback")
	p.SkipUnhealthy = true
	down := map[string]behavior{"primary": fail(chain.ServerError), "fallback": serve}
	up := map[string]behavior{"primary": serve, "fallback": serve}
	for range first.Threshold {
		runOn(t, first, p, down)
	}
	clock.Advance(first.Cooldown)
	// The only model of a chain is always tried: the second process sees it serve.
	only := plan(chain.AllTriggers, long, long, "primary")
	runOn(t, second, only, up)
	if got := runOn(t, second, p, down); !reflect.DeepEqual(got, []chain.Attempt{failed("primary", chain.ServerError), served("fallback")}) {
		t.Errorf("the first process's old failures still counted after this one's success: %+v", got)
	}
	runOn(t, first, p, down) // the first's probe fails: a new cool-down, reported after the success
	if got := runOn(t, second, p, down); !reflect.DeepEqual(got, []chain.Attempt{skippedUnhealthy, served("fallback")}) {
		t.Errorf("a cool-down opened after this process's success was not honoured: %+v", got)
	}
}

// What a process publishes: each counted failure, its cool-down, and the withdrawal at its first
// success after them — nothing for a success with no failures before it, nor for a failure the
// chain does not fail over on.
func TestSharedHealthPublishesChangesOnly(t *testing.T) {
	clock := &testClock{now: time.Unix(1_000_000, 0)}
	b := &board{}
	h := process(b, "a", clock.Now)
	p := plan(chain.AllTriggers, long, long, "primary", "fallback")
	p.SkipUnhealthy = true
	runOn(t, h, p, map[string]behavior{"primary": serve})
	if _, ok := b.report("primary", "a"); ok {
		t.Fatal("a healthy model was reported")
	}
	runOn(t, h, p, map[string]behavior{"primary": fail(chain.ServerError), "fallback": serve})
	r, ok := b.report("primary", "a")
	want := chain.HealthReport{Fails: 1, Last: clock.Now(), Expires: clock.Now().Add(max(h.Window, h.Cooldown))}
	if !ok || r != want {
		t.Fatalf("after one failure: %+v, want %+v", r, want)
	}
	onlyTimeouts := p
	var err error
	if onlyTimeouts.On, err = chain.ParseTriggers("on", []string{"timeout"}); err != nil {
		t.Fatal(err)
	}
	f := newFake(map[string]behavior{"primary": fail(chain.ServerError)})
	e := f.engine()
	e.Health = h
	clock.Advance(time.Second)
	_, _ = chain.Run(context.Background(), e, onlyTimeouts, false, f.try)
	if r, _ := b.report("primary", "a"); r != want {
		t.Errorf("a failure outside `on` changed the report: %+v", r)
	}
	runOn(t, h, p, map[string]behavior{"primary": serve})
	if _, ok := b.report("primary", "a"); ok {
		t.Error("the report outlived the success that ended its failures")
	}
}

// Whatever the others report, the chain's last model is tried, and Prefetch asks for the models
// skip_unhealthy may pass over: every one but the last, each once, and only with skip_unhealthy.
func TestSharedHealthLastModelAndPrefetch(t *testing.T) {
	clock := &testClock{now: time.Unix(1_000_000, 0)}
	b := &board{}
	first, second := process(b, "a", clock.Now), process(b, "b", clock.Now)
	p := plan(chain.AllTriggers, long, long, "primary", "fallback")
	p.SkipUnhealthy = true
	for range first.Threshold {
		runOn(t, first, p, map[string]behavior{"primary": fail(chain.ServerError), "fallback": serve})
	}
	only := plan(chain.AllTriggers, long, long, "primary")
	only.SkipUnhealthy = true
	if got := runOn(t, second, only, map[string]behavior{"primary": serve}); !reflect.DeepEqual(got, []chain.Attempt{served("primary")}) {
		t.Errorf("the only model was skipped: %+v", got)
	}

	three := plan(chain.AllTriggers, long, long, "x", "x", "y", "z")
	second.Prefetch(context.Background(), three)
	three.SkipUnhealthy = true
	second.Prefetch(context.Background(), three)
	second.Prefetch(context.Background(), only)
	if !reflect.DeepEqual(b.fetched, [][]string{{"x", "y"}}) {
		t.Errorf("prefetched %v, want [[x y]] once", b.fetched)
	}
}
