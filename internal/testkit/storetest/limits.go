package storetest

// The request-counter contract: requests admitted with no charge (ledger.Store.Admit), counted
// per window (limits.Counter).

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/limits"
)

// Counter is what the counter contract exercises: a store that admits requests and reads back
// their counts.
type Counter interface {
	Admit(ctx context.Context, keyID string, ws []limits.Window, userID string, c *billing.Charge) (full int, err error)
	limits.Counter
}

// RunCounter runs the counter contract. newCounter must return an empty counter isolated from
// every other call's, and register its own cleanup.
func RunCounter(t *testing.T, newCounter func(t *testing.T) Counter) {
	tests := []struct {
		name string
		run  func(t *testing.T, c Counter)
	}{
		{"a window admits up to its limit, then refuses", counterUpToLimit},
		{"a refused request is counted in no window", counterRefusedNotCounted},
		{"the refusal names the full window", counterNamesFullWindow},
		{"a new window starts at zero", counterNewWindow},
		{"keys are counted apart", counterKeysApart},
		{"a window with no limit counts and never refuses, beside one that does", counterNoLimit},
		{"200 concurrent requests against 60 per minute admit exactly 60", counterConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newCounter(t))
		})
	}
}

var counterNow = time.Date(2026, 12, 1, 10, 15, 30, 0, time.UTC)

func counterWindows(now time.Time, perMinute, perHour apikey.Limit) []limits.Window {
	return limits.Windows(&apikey.Key{RateLimit: apikey.RateLimit{RequestsPerMinute: perMinute, RequestsPerHour: perHour}}, now)
}

func mustTake(t *testing.T, c Counter, keyID string, ws []limits.Window) int {
	t.Helper()
	full, err := c.Admit(context.Background(), keyID, ws, "", nil)
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	return full
}

func mustCounts(t *testing.T, c limits.Counter, keyID string, ws []limits.Window) []int {
	t.Helper()
	n, err := c.RequestCounts(context.Background(), keyID, ws)
	if err != nil {
		t.Fatalf("RequestCounts: %v", err)
	}
	return n
}

func counterUpToLimit(t *testing.T, c Counter) {
	ws := counterWindows(counterNow, 3, 100)
	for i := range 3 {
		if full := mustTake(t, c, "k1", ws); full != -1 {
			t.Fatalf("request %d refused (window %d), want admitted", i+1, full)
		}
	}
	if full := mustTake(t, c, "k1", ws); full != 0 {
		t.Fatalf("4th request: full = %d, want 0 (the minute)", full)
	}
	if got := mustCounts(t, c, "k1", ws); !slices.Equal(got, []int{3, 3, 3, 3}) {
		t.Errorf("counts = %v, want [3 3 3 3]", got)
	}
}

func counterRefusedNotCounted(t *testing.T, c Counter) {
	// The hour is the tight one: the minute has room but must not count the refused request.
	ws := counterWindows(counterNow, 10, 2)
	mustTake(t, c, "k1", ws)
	mustTake(t, c, "k1", ws)
	for range 3 {
		if full := mustTake(t, c, "k1", ws); full != 1 {
			t.Fatalf("full = %d, want 1 (the hour)", full)
		}
	}
	if got := mustCounts(t, c, "k1", ws); !slices.Equal(got, []int{2, 2, 2, 2}) {
		t.Errorf("counts after refusals = %v, want [2 2 2 2]", got)
	}
}

func counterNamesFullWindow(t *testing.T, c Counter) {
	ws := limits.Windows(&apikey.Key{DailyLimit: 1}, counterNow)
	mustTake(t, c, "k1", ws)
	if full := mustTake(t, c, "k1", ws); full != int(limits.Day) {
		t.Errorf("full = %d, want %d (the day)", full, limits.Day)
	}
}

func counterNewWindow(t *testing.T, c Counter) {
	ws := counterWindows(counterNow, 1, 100)
	mustTake(t, c, "k1", ws)
	if full := mustTake(t, c, "k1", ws); full != 0 {
		t.Fatalf("second request in the minute: full = %d, want 0", full)
	}
	next := counterWindows(counterNow.Add(time.Minute), 1, 100)
	if full := mustTake(t, c, "k1", next); full != -1 {
		t.Fatalf("first request of the next minute refused (window %d)", full)
	}
	if got := mustCounts(t, c, "k1", next); !slices.Equal(got, []int{1, 2, 2, 2}) {
		t.Errorf("counts = %v, want [1 2 2 2]", got)
	}
}

func counterNoLimit(t *testing.T, c Counter) {
	// Unlimited minute, hour and month; a day of 3 still refuses the 4th.
	ws := limits.Windows(&apikey.Key{RateLimit: apikey.RateLimit{RequestsPerMinute: apikey.NoLimit, RequestsPerHour: apikey.NoLimit},
		DailyLimit: 3, MonthlyLimit: apikey.NoLimit}, counterNow)
	for i := range 3 {
		if full := mustTake(t, c, "k1", ws); full != -1 {
			t.Fatalf("request %d refused (window %d), want admitted", i+1, full)
		}
	}
	if full := mustTake(t, c, "k1", ws); full != int(limits.Day) {
		t.Fatalf("4th request: full = %d, want %d (the day)", full, limits.Day)
	}
	none := limits.Windows(&apikey.Key{RateLimit: apikey.RateLimit{RequestsPerMinute: apikey.NoLimit, RequestsPerHour: apikey.NoLimit},
		DailyLimit: apikey.NoLimit, MonthlyLimit: apikey.NoLimit}, counterNow)
	for i := range 70 { // past the default 60 a minute
		if full := mustTake(t, c, "k2", none); full != -1 {
			t.Fatalf("request %d of a key with no limits refused (window %d)", i+1, full)
		}
	}
	if got := mustCounts(t, c, "k2", none); !slices.Equal(got, []int{70, 70, 70, 70}) {
		t.Errorf("counts = %v, want [70 70 70 70]: a window with no limit is still counted", got)
	}
}

func counterKeysApart(t *testing.T, c Counter) {
	ws := counterWindows(counterNow, 1, 100)
	if mustTake(t, c, "k1", ws) != -1 || mustTake(t, c, "k2", ws) != -1 {
		t.Fatal("the first request of each key was refused")
	}
	if got := mustCounts(t, c, "k3", ws); !slices.Equal(got, []int{0, 0, 0, 0}) {
		t.Errorf("an unused key's counts = %v, want zeros", got)
	}
}

func counterConcurrent(t *testing.T, c Counter) {
	ws := limits.Windows(&apikey.Key{}, counterNow) // the defaults: 60 per minute
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			full, err := c.Admit(context.Background(), "k1", ws, "", nil)
			if err != nil {
				t.Errorf("Admit: %v", err)
			}
			if full == -1 {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	if n := admitted.Load(); n != 60 {
		t.Errorf("admitted %d of 200, want exactly 60", n)
	}
	if got := mustCounts(t, c, "k1", ws); got[0] != 60 {
		t.Errorf("minute count = %d, want 60", got[0])
	}
}
