package storetest

// The request-stats contract (reqstats.Store): additive buckets per resolution, read back by
// range, concurrent flushes from many processes adding up exactly.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/reqstats"
)

// RunRequestStats runs the request-stats contract. newStore must return an empty store isolated
// from every other call's, and register its own cleanup.
func RunRequestStats(t *testing.T, newStore func(t *testing.T) reqstats.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, st reqstats.Store)
	}{
		{"buckets read back by resolution and range, oldest first", statsReadBack},
		{"adds to one bucket sum", statsAddsSum},
		{"20 processes flushing concurrently add up exactly", statsConcurrentFlushes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

var statsNow = time.Date(2026, 12, 1, 10, 15, 30, 0, time.UTC)

func counts(openaiServed, openaiFailed, classicServed, classicFailed int64) reqstats.Counts {
	return reqstats.Counts{{openaiServed, openaiFailed}, {classicServed, classicFailed}}
}

func mustAddStats(t *testing.T, st reqstats.Store, bs ...reqstats.Bucket) {
	t.Helper()
	if err := st.AddRequestStats(context.Background(), bs); err != nil {
		t.Fatalf("AddRequestStats: %v", err)
	}
}

func mustReadStats(t *testing.T, st reqstats.Store, res reqstats.Resolution, from, to time.Time) []reqstats.Bucket {
	t.Helper()
	bs, err := st.RequestStats(context.Background(), res, from, to)
	if err != nil {
		t.Fatalf("RequestStats: %v", err)
	}
	return bs
}

func statsReadBack(t *testing.T, st reqstats.Store) {
	m := statsNow.Truncate(time.Minute)
	h := statsNow.Truncate(time.Hour)
	mustAddStats(t, st,
		reqstats.Bucket{Res: reqstats.Minute, Start: m.Add(-2 * time.Minute), N: counts(1, 2, 3, 4)},
		reqstats.Bucket{Res: reqstats.Minute, Start: m, N: counts(5, 0, 0, 1)},
		reqstats.Bucket{Res: reqstats.Minute, Start: m.Add(-time.Hour), N: counts(9, 9, 9, 9)},
		reqstats.Bucket{Res: reqstats.Hour, Start: h, N: counts(6, 2, 3, 5)},
	)
	got := mustReadStats(t, st, reqstats.Minute, m.Add(-59*time.Minute), m.Add(time.Minute))
	want := []reqstats.Bucket{
		{Res: reqstats.Minute, Start: m.Add(-2 * time.Minute), N: counts(1, 2, 3, 4)},
		{Res: reqstats.Minute, Start: m, N: counts(5, 0, 0, 1)},
	}
	assertBuckets(t, "the last hour's minutes", got, want)
	got = mustReadStats(t, st, reqstats.Hour, h.Add(-23*time.Hour), h.Add(time.Hour))
	assertBuckets(t, "the last day's hours", got, []reqstats.Bucket{{Res: reqstats.Hour, Start: h, N: counts(6, 2, 3, 5)}})
	if got := mustReadStats(t, st, reqstats.Minute, m.Add(time.Minute), m.Add(time.Hour)); len(got) != 0 {
		t.Errorf("a range with nothing stored read %v, want none", got)
	}
}

func statsAddsSum(t *testing.T, st reqstats.Store) {
	m := statsNow.Truncate(time.Minute)
	for range 3 {
		mustAddStats(t, st, reqstats.Bucket{Res: reqstats.Minute, Start: m, N: counts(1, 0, 2, 1)})
	}
	got := mustReadStats(t, st, reqstats.Minute, m, m.Add(time.Minute))
	assertBuckets(t, "after three adds", got, []reqstats.Bucket{{Res: reqstats.Minute, Start: m, N: counts(3, 0, 6, 3)}})
}

// statsConcurrentFlushes has 20 processes (Counters) count requests over two minutes of one hour
// and flush at once, twice: every count must be in its minute's bucket and in the hour's.
func statsConcurrentFlushes(t *testing.T, st reqstats.Store) {
	const processes, perMinute = 20, 7
	m := statsNow.Truncate(time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, 2*processes)
	for range processes {
		c := reqstats.NewCounter(time.Minute, func() time.Time { return statsNow })
		for i := range perMinute {
			c.Add(m.Add(time.Duration(i)*time.Second), reqstats.OpenAI, reqstats.Served)
			c.Add(m.Add(-time.Minute), reqstats.Classic, reqstats.Failed)
		}
		wg.Go(func() {
			errs <- c.Flush(context.Background(), st)
			c.Add(m.Add(59*time.Second), reqstats.OpenAI, reqstats.Failed)
			errs <- c.Flush(context.Background(), st)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Flush: %v", err)
		}
	}
	got := mustReadStats(t, st, reqstats.Minute, m.Add(-time.Hour), m.Add(time.Hour))
	assertBuckets(t, "minute buckets", got, []reqstats.Bucket{
		{Res: reqstats.Minute, Start: m.Add(-time.Minute), N: counts(0, 0, 0, processes*perMinute)},
		{Res: reqstats.Minute, Start: m, N: counts(processes*perMinute, processes, 0, 0)},
	})
	h := m.Truncate(time.Hour)
	got = mustReadStats(t, st, reqstats.Hour, h, h.Add(time.Hour))
	assertBuckets(t, "the hour bucket", got, []reqstats.Bucket{
		{Res: reqstats.Hour, Start: h, N: counts(processes*perMinute, processes, 0, processes*perMinute)},
	})
}

func assertBuckets(t *testing.T, what string, got, want []reqstats.Bucket) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: read %d buckets %v, want %d %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if got[i].Res != want[i].Res || !got[i].Start.Equal(want[i].Start) || got[i].N != want[i].N {
			t.Errorf("%s: bucket %d is %+v, want %+v", what, i, got[i], want[i])
		}
	}
}
