package reqstats_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/reqstats"
)

// memStore is a reqstats.Store in a map, failing the buckets fail says.
type memStore struct {
	mu    sync.Mutex
	rows  map[[2]int64]reqstats.Counts
	adds  int
	fail  func(reqstats.Bucket) bool
	every error
}

func newMem() *memStore { return &memStore{rows: map[[2]int64]reqstats.Counts{}} }

func (m *memStore) AddRequestStats(_ context.Context, bs []reqstats.Bucket) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.adds++
	if m.every != nil {
		return m.every
	}
	var failed []reqstats.Bucket
	for _, b := range bs {
		if m.fail != nil && m.fail(b) {
			failed = append(failed, b)
			continue
		}
		k := [2]int64{int64(b.Res), b.Start.Unix()}
		n := m.rows[k]
		n.Add(&b.N)
		m.rows[k] = n
	}
	if failed != nil {
		return &reqstats.PartialError{Failed: failed, Err: errors.New("throttled")}
	}
	return nil
}

func (m *memStore) RequestStats(_ context.Context, res reqstats.Resolution, from, to time.Time) ([]reqstats.Bucket, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []reqstats.Bucket
	for t := from; t.Before(to); t = t.Add(res.Duration()) {
		if n, ok := m.rows[[2]int64{int64(res), t.Unix()}]; ok {
			out = append(out, reqstats.Bucket{Res: res, Start: t, N: n})
		}
	}
	return out, nil
}

func (m *memStore) row(res reqstats.Resolution, start time.Time) reqstats.Counts {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rows[[2]int64{int64(res), start.Unix()}]
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func TestFinishedCountsBySurfaceAndOutcome(t *testing.T) {
	now := t0.Add(90 * time.Second)
	c := reqstats.NewCounter(time.Minute, func() time.Time { return now })
	ctx := context.Background()
	c.Finished(ctx, completion.Outcome{Surface: "openai"})
	c.Finished(ctx, completion.Outcome{Surface: "openai", Err: errors.New("all failed")})
	c.Finished(ctx, completion.Outcome{Surface: "classic"})
	c.Finished(ctx, completion.Outcome{Surface: "classic"})
	st := newMem()
	if err := c.Flush(ctx, st); err != nil {
		t.Fatal(err)
	}
	want := reqstats.Counts{{1, 1}, {2, 0}}
	if got := st.row(reqstats.Minute, t0.Add(time.Minute)); got != want {
		t.Errorf("minute bucket %v, want %v", got, want)
	}
	if got := st.row(reqstats.Hour, t0); got != want {
		t.Errorf("hour bucket %v, want %v", got, want)
	}
	if err := c.Flush(ctx, st); err != nil || st.adds != 1 {
		t.Errorf("a flush with nothing counted wrote (%d adds, %v), want no write", st.adds, err)
	}
}

// TestCounterKeepsEveryMinute counts over more minutes than the counter has slots, with one
// request arriving late for an old minute, and flushes once: every minute keeps its own count.
func TestCounterKeepsEveryMinute(t *testing.T) {
	c := reqstats.NewCounter(time.Minute, nil)
	for i := range 10 {
		for range i + 1 {
			c.Add(t0.Add(time.Duration(i)*time.Minute), reqstats.OpenAI, reqstats.Served)
		}
	}
	c.Add(t0, reqstats.OpenAI, reqstats.Failed) // late, for a minute whose slot was reused
	st := newMem()
	if err := c.Flush(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		want := reqstats.Counts{{int64(i + 1), 0}}
		if i == 0 {
			want[0][1] = 1
		}
		if got := st.row(reqstats.Minute, t0.Add(time.Duration(i)*time.Minute)); got != want {
			t.Errorf("minute %d: %v, want %v", i, got, want)
		}
	}
	if got, want := st.row(reqstats.Hour, t0), (reqstats.Counts{{55, 1}}); got != want {
		t.Errorf("hour: %v, want %v", got, want)
	}
}

// TestFailedFlushKeepsCounts: a failed flush's counts (all of them, or the buckets a partial
// failure names) are added by the next flush, never twice.
func TestFailedFlushKeepsCounts(t *testing.T) {
	ctx := context.Background()
	c := reqstats.NewCounter(time.Minute, nil)
	c.Add(t0, reqstats.Classic, reqstats.Served)
	st := newMem()
	st.every = errors.New("store down")
	if err := c.Flush(ctx, st); err == nil {
		t.Fatal("a flush to a failing store reported no error")
	}
	st.every = nil
	st.fail = func(b reqstats.Bucket) bool { return b.Res == reqstats.Hour }
	c.Add(t0, reqstats.Classic, reqstats.Served)
	var p *reqstats.PartialError
	if err := c.Flush(ctx, st); !errors.As(err, &p) {
		t.Fatalf("partial failure: %v, want a *PartialError", err)
	}
	st.fail = nil
	if err := c.Flush(ctx, st); err != nil {
		t.Fatal(err)
	}
	want := reqstats.Counts{{}, {2, 0}}
	if got := st.row(reqstats.Minute, t0); got != want {
		t.Errorf("minute: %v, want %v", got, want)
	}
	if got := st.row(reqstats.Hour, t0); got != want {
		t.Errorf("hour: %v, want %v", got, want)
	}
}

func TestFlushIfDue(t *testing.T) {
	now := t0
	c := reqstats.NewCounter(time.Minute, func() time.Time { return now })
	st := newMem()
	c.Add(now, reqstats.OpenAI, reqstats.Served)
	now = now.Add(59 * time.Second)
	if err := c.FlushIfDue(context.Background(), st); err != nil || st.adds != 0 {
		t.Fatalf("flushed before the interval passed (%d adds, %v)", st.adds, err)
	}
	now = now.Add(time.Second)
	if err := c.FlushIfDue(context.Background(), st); err != nil || st.adds != 1 {
		t.Fatalf("not flushed once the interval passed (%d adds, %v)", st.adds, err)
	}
}

func TestRead(t *testing.T) {
	st := newMem()
	now := t0.Add(5*time.Minute + 10*time.Second)
	_ = st.AddRequestStats(context.Background(), []reqstats.Bucket{
		{Res: reqstats.Minute, Start: t0.Add(5 * time.Minute), N: reqstats.Counts{{3, 1}, {1, 0}}},
		{Res: reqstats.Minute, Start: t0.Add(-2 * time.Hour), N: reqstats.Counts{{100, 0}}},
		{Res: reqstats.Hour, Start: t0.Add(-3 * time.Hour), N: reqstats.Counts{{7, 0}}},
	})
	for _, tc := range []struct {
		name    string
		buckets int
		want    string
	}{
		{"", 60, `"total":5,"served":4,"failed":1`},
		{"day", 24, `"total":7,"served":7,"failed":0`},
		{"week", 168, `"total":7,"served":7,"failed":0`},
	} {
		rep, err := reqstats.Read(context.Background(), st, tc.name, now)
		if err != nil {
			t.Fatalf("%q: %v", tc.name, err)
		}
		raw, _ := json.Marshal(rep)
		body := string(raw)
		if !strings.Contains(body, tc.want) || strings.Count(body, `"start"`) != tc.buckets {
			t.Errorf("%q: %s, want %d buckets and %s", tc.name, body, tc.buckets, tc.want)
		}
	}
	_, err := reqstats.Read(context.Background(), st, "month", now)
	var fe *fault.Error
	if !errors.As(err, &fe) || !strings.Contains(fe.Error(), "hour, day, week") {
		t.Errorf("range=month failed with %v, want an invalid-parameter error naming the ranges", err)
	}
}

// TestConcurrentAddsAndFlushes: requests counted while flushes run, across minute changes, all
// end up written exactly once.
func TestConcurrentAddsAndFlushes(t *testing.T) {
	const workers, each = 8, 2000
	c := reqstats.NewCounter(time.Minute, nil)
	st := newMem()
	done := make(chan struct{})
	flushed := make(chan error, 1)
	go func() {
		var err error
		for {
			select {
			case <-done:
				flushed <- err
				return
			default:
				if e := c.Flush(context.Background(), st); e != nil {
					err = e
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				// Six minutes, more than the counter's slots, so slots are reused while flushing.
				c.Add(t0.Add(time.Duration((i+w)%6)*time.Minute), reqstats.Surface(w%2), reqstats.Served)
			}
		})
	}
	wg.Wait()
	close(done)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	var minutes int64
	for m := range 6 {
		n := st.row(reqstats.Minute, t0.Add(time.Duration(m)*time.Minute))
		minutes += n[reqstats.OpenAI][reqstats.Served] + n[reqstats.Classic][reqstats.Served]
	}
	hour := st.row(reqstats.Hour, t0)
	if want := int64(workers * each); minutes != want || hour[reqstats.OpenAI][reqstats.Served]+hour[reqstats.Classic][reqstats.Served] != want {
		t.Errorf("written: %d in the minutes, %v in the hour; want %d in each", minutes, hour, want)
	}
}
