package gateway_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
)

// A user's spend crossing its budget thresholds on the local server: each threshold is one
// billing:budget_threshold event in the audit log, however many requests settle at once, naming
// the budget, limit, spend and period; the request refused at 100 % adds none.
func TestBudgetThresholdsAreAnnouncedOnce(t *testing.T) {
	g := gatewaykit.ServeFakes(t, "")
	if status, _, b := g.Call(t, "PUT", "/admin/users/thr", g.Admin, `{"monthlyPoints":8,"budgetThresholds":[50,100]}`); status != 200 {
		t.Fatalf("PUT user: %d %s", status, b.Raw)
	}
	key := g.NewKey(t, `{"name":"thresholds","userId":"thr"}`)
	body := `{"index":"Zero-Knowledge","prompt":"hi","models":["fake/ok"]}` // 1 point each
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if status, _, b := g.Call(t, "POST", "/chat/completions", key, body); status != 200 {
				t.Errorf("request: %d %s", status, b.Raw)
			}
		})
	}
	wg.Wait()
	if status, _, _ := g.Call(t, "POST", "/chat/completions", key, body); status != 402 {
		t.Errorf("a request past the allowance: %d, want 402", status)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, _, logs := g.Call(t, "GET", "/admin/audit-logs?type=billing:budget_threshold", g.Admin, "")
		entries := logs.Get("logs").Array()
		var got []int64
		for _, e := range entries {
			got = append(got, e.Get("metadata.data.threshold").Int())
		}
		slices.Sort(got)
		if slices.Equal(got, []int64{50, 100}) {
			for _, e := range entries {
				d := e.Get("metadata.data")
				if d.Get("budget").String() != "points" || d.Get("limit").Int() != 8 || d.Get("spend").Int() < 4 ||
					!d.Get("periodStart").Exists() || !d.Get("periodEnd").Exists() || e.Get("user.id").String() != "thr" {
					t.Errorf("entry %s", e.Raw)
				}
			}
			break
		}
		if len(got) > 2 || time.Now().After(deadline) {
			t.Fatalf("thresholds announced %v, want 50 and 100 once each: %s", got, logs.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
