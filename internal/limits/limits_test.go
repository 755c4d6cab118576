package limits_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"log/slog"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
)

func TestMemoryCounterContract(t *testing.T) {
	storetest.RunCounter(t, func(*testing.T) storetest.Counter {
		m := limits.NewMemory()
		return struct {
			ledger.Local
			*limits.Memory
		}{ledger.Local{Counter: m}, m}
	})
}

// admit counts a request as a completion's admission does in a deployment that bills nothing.
func admit(m *limits.Memory, k *apikey.Key, now time.Time) error {
	_, err := (&ledger.Ledger{Store: ledger.Local{Counter: m}, Limits: true}).Admit(context.Background(), k, nil, billing.Estimate{}, now)
	return err
}

func TestWindowsAreUTCCalendarWindows(t *testing.T) {
	now := time.Date(2026, 12, 31, 23, 59, 30, 5, time.FixedZone("X", 3600))
	u := now.UTC()
	for _, tc := range []struct {
		p            limits.Period
		start, reset time.Time
	}{
		{limits.Minute, time.Date(2026, 12, 31, 22, 59, 0, 0, time.UTC), time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC)},
		{limits.Hour, time.Date(2026, 12, 31, 22, 0, 0, 0, time.UTC), time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC)},
		{limits.Day, time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{limits.Month, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		w := limits.Windows(&apikey.Key{}, u)[tc.p]
		if !w.Start.Equal(tc.start) || !w.End().Equal(tc.reset) || w.Period != tc.p {
			t.Errorf("%s: window %v–%v, want %v–%v", tc.p, w.Start, w.End(), tc.start, tc.reset)
		}
	}
}

func TestAdmitRefusalIsTheContractsRateLimit(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 15, 30, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		key    apikey.Key
		title  string
		reset  time.Time
		retry  time.Duration
		period limits.Period
	}{
		{"per minute", apikey.Key{ID: "m", RateLimit: apikey.RateLimit{RequestsPerMinute: 1}},
			"Rate limit exceeded: too many requests per minute", time.Date(2026, 12, 1, 10, 16, 0, 0, time.UTC), 30 * time.Second, limits.Minute},
		{"per hour", apikey.Key{ID: "h", RateLimit: apikey.RateLimit{RequestsPerHour: 1}},
			"Rate limit exceeded: too many requests per hour", time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC), 2670 * time.Second, limits.Hour},
		{"per day", apikey.Key{ID: "d", DailyLimit: 1},
			"Rate limit exceeded: too many requests per day", time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), 49470 * time.Second, limits.Day},
		{"per month", apikey.Key{ID: "mo", MonthlyLimit: 1},
			"Rate limit exceeded: too many requests per month", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), 31*24*time.Hour - 10*time.Hour - 15*time.Minute - 30*time.Second, limits.Month},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := limits.NewMemory()
			if err := admit(m, &tc.key, now); err != nil {
				t.Fatalf("first request: %v", err)
			}
			err := admit(m, &tc.key, now)
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.K != fault.RateLimited || fe.Title != tc.title || fe.RetryAfter != tc.retry {
				t.Fatalf("second request: %#v, want RateLimited %q retry %v", err, tc.title, tc.retry)
			}
			var ex *limits.Exceeded
			if !errors.As(err, &ex) || !ex.ResetTime.Equal(tc.reset) || ex.Period != tc.period || ex.Limit != 1 {
				t.Errorf("cause %+v, want reset %v", ex, tc.reset)
			}
		})
	}
}

func TestUsageReportsCountsAndResets(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 15, 30, 0, time.UTC)
	m := limits.NewMemory()
	l := limits.Limiter{Counter: m}
	k := &apikey.Key{ID: "k", DailyLimit: 5}
	for range 2 {
		if err := admit(m, k, now); err != nil {
			t.Fatal(err)
		}
	}
	u, err := l.Usage(context.Background(), k, now)
	if err != nil {
		t.Fatal(err)
	}
	day := u[limits.Day]
	if left, limited := day.Remaining(); day.Used != 2 || day.Limit != 5 || !limited || left != 3 || !day.ResetTime.Equal(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("day usage %+v", day)
	}
}

func TestNoLimitCountsAndNeverRefuses(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 15, 30, 0, time.UTC)
	m := limits.NewMemory()
	l := limits.Limiter{Counter: m}
	k := &apikey.Key{ID: "k", RateLimit: apikey.RateLimit{RequestsPerMinute: apikey.NoLimit, RequestsPerHour: apikey.NoLimit},
		DailyLimit: apikey.NoLimit, MonthlyLimit: apikey.NoLimit}
	for i := range 200 { // past every default limit
		if err := admit(m, k, now); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	if err := l.Full(context.Background(), k, now); err != nil {
		t.Errorf("Full = %v, want nil for a key with no limits", err)
	}
	u, err := l.Usage(context.Background(), k, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range u {
		if _, limited := w.Remaining(); limited || w.Used != 200 || w.Limit != apikey.NoLimit {
			t.Errorf("%s usage %+v, want 200 used and no limit", w.Period, w)
		}
	}
}

func TestLimitJSON(t *testing.T) {
	for _, tc := range []struct {
		l    apikey.Limit
		json string
	}{{apikey.NoLimit, "null"}, {5, "5"}} {
		b, err := json.Marshal(tc.l)
		if err != nil || string(b) != tc.json {
			t.Errorf("Marshal(%d) = %s, %v; want %s", tc.l, b, err, tc.json)
		}
		var back apikey.Limit = 7
		if err := json.Unmarshal(b, &back); err != nil || back != tc.l {
			t.Errorf("Unmarshal(%s) = %d, %v; want %d", b, back, err, tc.l)
		}
	}
	// Inside a key, as the embedded store keeps it: null comes back as no limit, absent as unset.
	var k apikey.Key
	if err := json.Unmarshal([]byte(`{"dailyLimit": null, "rateLimit": {"requestsPerHour": 9}}`), &k); err != nil {
		t.Fatal(err)
	}
	if k.DailyLimit != apikey.NoLimit || k.MonthlyLimit != 0 || k.RateLimit.RequestsPerHour != 9 {
		t.Errorf("decoded %+v", k)
	}
	if l := k.Limits(); l.PerDay != apikey.NoLimit || l.PerMonth != apikey.DefaultLimits.PerMonth {
		t.Errorf("effective limits %+v, want no daily limit and the default monthly one", l)
	}
}

// fakePersister keeps what was saved, as the embedded store would.
type fakePersister struct{ saved []limits.Record }

func (p *fakePersister) SaveRequestCounts(_ context.Context, rs []limits.Record) error {
	p.saved = rs
	return nil
}
func (p *fakePersister) LoadRequestCounts(context.Context) ([]limits.Record, error) {
	return p.saved, nil
}

func TestRestartKeepsOpenWindowsCounts(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 15, 30, 0, time.UTC)
	k := &apikey.Key{ID: "k"}
	before := limits.NewMemory()
	for range 3 {
		if err := admit(before, k, now); err != nil {
			t.Fatal(err)
		}
	}
	var p fakePersister
	if err := before.Persist(context.Background(), &p, now); err != nil {
		t.Fatal(err)
	}
	// Restarted two minutes later: the minute window has ended, the others carry on.
	later := now.Add(2 * time.Minute)
	after := limits.NewMemory()
	if err := after.Restore(context.Background(), &p, later); err != nil {
		t.Fatal(err)
	}
	u, err := (&limits.Limiter{Counter: after}).Usage(context.Background(), k, later)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range u {
		want := 3
		if w.Period == limits.Minute {
			want = 0
		}
		if w.Used != want {
			t.Errorf("%s after restart: %d, want %d", w.Period, w.Used, want)
		}
	}
}

func BenchmarkMemoryAdmit(b *testing.B) {
	m := limits.NewMemory()
	k := &apikey.Key{ID: "k", RateLimit: apikey.RateLimit{RequestsPerMinute: apikey.MaxPerMinute, RequestsPerHour: apikey.MaxPerHour}, DailyLimit: 1 << 30, MonthlyLimit: 1 << 30}
	now := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = admit(m, k, now)
		}
	})
}

func TestPersistEverySavesAgainAtShutdown(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 15, 30, 0, time.UTC)
	m := limits.NewMemory()
	if err := admit(m, &apikey.Key{ID: "k"}, now); err != nil {
		t.Fatal(err)
	}
	var p fakePersister
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.PersistEvery(ctx, &p, time.Hour, func() time.Time { return now }, slog.New(slog.DiscardHandler))
	}()
	cancel()
	<-done
	if len(p.saved) != 4 {
		t.Errorf("saved %d records at shutdown, want the 4 windows of the one key", len(p.saved))
	}
}
