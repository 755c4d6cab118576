package storetest

// The ledger contract (ledger.Store, through ledger.Ledger): a request is counted in its windows
// and its reservation held in one atomic step, and settled together with its receipt.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/receipt"
)

// LedgerStores are a ledger.Store and the stores it writes to, read back by the contract.
type LedgerStores struct {
	Ledger   ledger.Store
	Counts   limits.Counter
	Users    billing.Store
	Receipts receipt.Store
}

// RunLedger runs the ledger contract. newStores must return empty stores isolated from every
// other call's, and register their own cleanup.
func RunLedger(t *testing.T, newStores func(t *testing.T) LedgerStores) {
	tests := []struct {
		name string
		run  func(t *testing.T, s LedgerStores)
	}{
		{"200 concurrent requests against 60 per minute admit exactly 60", ledgerConcurrentLimit},
		{"50 concurrent reservations with room for 10 succeed exactly 10, counting only those", ledgerConcurrentQuota},
		{"a quota refusal counts in no window", ledgerQuotaRefusalUncounted},
		{"a full window holds no reservation", ledgerLimitRefusalHoldsNothing},
		{"a refusal names its window or its quota", ledgerRefusalsNamed},
		{"points exhausted fall back to usage-by-model", ledgerFallback},
		{"a stale cached user fails safe both ways", ledgerStaleCache},
		{"a new period starts at zero", ledgerRollover},
		{"an unknown user is created with the defaults", ledgerNewUser},
		{"settlement and receipt are stored together, or neither", ledgerSettleWithReceipt},
		{"a reservation not settled by its deadline is refunded once, and billed once if it settles late", ledgerRefundExpired},
		{"a settled reservation is never refunded", ledgerSettledNotRefunded},
		{"settlements racing refunds bill each request exactly once", ledgerRefundRace},
		{"a reservation beyond the admitted one (a hedge) is a hold of its own, counted in no window", ledgerReserveHeld},
		{"concurrent settlements across budget thresholds announce each exactly once", ledgerThresholdsOnce},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStores(t)) })
	}
}

var (
	ledgerNow   = counterNow
	ledgerCheap = &catalog.Model{Name: "a/cheap", Points: 1, Pricing: catalog.Pricing{InputPer1M: 1, OutputPer1M: 2}}
	ledgerDear  = &catalog.Model{Name: "a/dear", Points: 4, Pricing: catalog.Pricing{InputPer1M: 3, OutputPer1M: 15}}
	// roomy is a key whose limits no test reaches, billing user u1.
	roomy = &apikey.Key{ID: "k1", UserID: "u1", RateLimit: apikey.RateLimit{RequestsPerMinute: 1000, RequestsPerHour: 10000},
		DailyLimit: 100000, MonthlyLimit: 100000}
)

// newLedger stores users and returns a ledger over s that trusts its cached users for an hour,
// so the stale-cache cases are the cache's, not the clock's.
func newLedger(t *testing.T, s LedgerStores, users ...*billing.User) *ledger.Ledger {
	t.Helper()
	for _, u := range users {
		mustCreateUser(t, s.Users, u)
	}
	return &ledger.Ledger{Store: s.Ledger, Limits: true, UserTTL: time.Hour,
		Biller: &billing.Biller{Store: s.Users, Now: func() time.Time { return ledgerNow }}}
}

func ledgerUser(points int64, usageByModel bool, dollars float64) *billing.User {
	return billing.NewUser("u1", billing.Defaults{MonthlyPoints: points, UsageByModel: usageByModel, DollarLimitMicros: billing.Micros(dollars)}, ledgerNow)
}

func isKind(err error, k fault.Kind) bool {
	var fe *fault.Error
	return errors.As(err, &fe) && fe.K == k
}

func ledgerConcurrentLimit(t *testing.T, s LedgerStores) {
	l := newLedger(t, s, ledgerUser(1000, false, 0))
	key := &apikey.Key{ID: "k1", UserID: "u1"} // the defaults: 60 per minute
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			_, err := l.Admit(context.Background(), key, []*catalog.Model{ledgerCheap}, billing.Estimate{}, ledgerNow)
			switch {
			case err == nil:
				admitted.Add(1)
			case !isKind(err, fault.RateLimited):
				t.Errorf("Admit: %v", err)
			}
		})
	}
	wg.Wait()
	if n := admitted.Load(); n != 60 {
		t.Errorf("admitted %d of 200, want exactly 60", n)
	}
	if got := mustCounts(t, s.Counts, "k1", limits.Windows(key, ledgerNow)); got[0] != 60 {
		t.Errorf("minute count = %d, want 60", got[0])
	}
	if got := mustUser(t, s.Users, "u1").PointsUsed; got != 60 {
		t.Errorf("points held %d, want 60 (the admitted requests only)", got)
	}
}

func ledgerConcurrentQuota(t *testing.T, s LedgerStores) {
	l := newLedger(t, s, ledgerUser(40, false, 0))
	chain := []*catalog.Model{ledgerCheap, ledgerDear} // room for 10 at 4
	var held atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			_, err := l.Admit(context.Background(), roomy, chain, billing.Estimate{}, ledgerNow)
			switch {
			case err == nil:
				held.Add(1)
			case !isKind(err, fault.QuotaExceeded):
				t.Errorf("Admit: %v", err)
			}
		})
	}
	wg.Wait()
	if n := held.Load(); n != 10 {
		t.Errorf("%d reservations succeeded, want exactly 10", n)
	}
	if got := mustUser(t, s.Users, "u1").PointsUsed; got != 40 {
		t.Errorf("points used %d, want 40", got)
	}
	if got := mustCounts(t, s.Counts, "k1", limits.Windows(roomy, ledgerNow)); !slices.Equal(got, []int{10, 10, 10, 10}) {
		t.Errorf("counts %v, want the 10 admitted requests in every window", got)
	}
}

func ledgerQuotaRefusalUncounted(t *testing.T, s LedgerStores) {
	l := newLedger(t, s, ledgerUser(3, false, 0))
	for range 3 {
		if _, err := l.Admit(context.Background(), roomy, []*catalog.Model{ledgerDear}, billing.Estimate{}, ledgerNow); !isKind(err, fault.QuotaExceeded) {
			t.Fatalf("Admit = %v, want QuotaExceeded", err)
		}
	}
	if got := mustCounts(t, s.Counts, "k1", limits.Windows(roomy, ledgerNow)); !slices.Equal(got, []int{0, 0, 0, 0}) {
		t.Errorf("counts after quota refusals %v, want zeros", got)
	}
}

func ledgerLimitRefusalHoldsNothing(t *testing.T, s LedgerStores) {
	l := newLedger(t, s, ledgerUser(100, false, 0))
	key := &apikey.Key{ID: "k1", UserID: "u1", RateLimit: apikey.RateLimit{RequestsPerMinute: 1}}
	ctx := context.Background()
	if _, err := l.Admit(ctx, key, []*catalog.Model{ledgerDear}, billing.Estimate{}, ledgerNow); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Admit(ctx, key, []*catalog.Model{ledgerDear}, billing.Estimate{}, ledgerNow); !isKind(err, fault.RateLimited) {
		t.Fatalf("second request = %v, want RateLimited", err)
	}
	if got := mustUser(t, s.Users, "u1").PointsUsed; got != 4 {
		t.Errorf("points held %d, want 4 (the admitted request's only)", got)
	}
}

func ledgerRefusalsNamed(t *testing.T, s LedgerStores) {
	// One user per case, each its own key so their windows stay apart.
	cases := []struct {
		name        string
		user        *billing.User
		key         *apikey.Key
		kind        fault.Kind
		title, code string
		period      limits.Period
	}{
		{"points exhausted", ledgerUser(3, false, 0), &apikey.Key{ID: "kp"}, fault.QuotaExceeded, "Completion limit exceeded", "points_exhausted", 0},
		{"points exhausted, budget too small", ledgerUser(3, true, 0.000001), &apikey.Key{ID: "kf"}, fault.QuotaExceeded, "Completion limit exceeded", "points_exhausted", 0},
		{"budget exceeded", ledgerUser(100, true, 0.000001), &apikey.Key{ID: "kb", BillingMode: apikey.UsageByModel}, fault.QuotaExceeded, "Usage by Model budget exceeded", "budget_exceeded", 0},
		{"usage-by-model off", ledgerUser(100, false, 100), &apikey.Key{ID: "ku", BillingMode: apikey.UsageByModel}, fault.QuotaExceeded, "Usage by Model required", "usage_by_model_required", 0},
		{"hour full", ledgerUser(100, false, 0), &apikey.Key{ID: "kh", RateLimit: apikey.RateLimit{RequestsPerHour: 1}}, fault.RateLimited, "Rate limit exceeded: too many requests per hour", "rate_limit_exceeded", limits.Hour},
		{"day full", ledgerUser(100, false, 0), &apikey.Key{ID: "kd", DailyLimit: 1}, fault.RateLimited, "Rate limit exceeded: too many requests per day", "rate_limit_exceeded", limits.Day},
	}
	l := newLedger(t, s)
	ctx := context.Background()
	for _, tc := range cases {
		tc.user.ID, tc.key.UserID = "u_"+tc.key.ID, "u_"+tc.key.ID
		mustCreateUser(t, s.Users, tc.user)
		var err error
		for range 2 { // the second request finds the window full
			if _, err = l.Admit(ctx, tc.key, []*catalog.Model{ledgerDear}, billing.Estimate{InputTokens: 100}, ledgerNow); err != nil {
				break
			}
		}
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.K != tc.kind || fe.Title != tc.title || fe.Code != tc.code {
			t.Errorf("%s: %#v, want %s %q (%s)", tc.name, err, tc.kind, tc.title, tc.code)
			continue
		}
		var ex *limits.Exceeded
		if tc.kind == fault.RateLimited && (!errors.As(err, &ex) || ex.Period != tc.period) {
			t.Errorf("%s: cause %+v, want the %s window", tc.name, ex, tc.period)
		}
	}
}

func ledgerFallback(t *testing.T, s LedgerStores) {
	l := newLedger(t, s, ledgerUser(3, true, 5))
	r, err := l.Admit(context.Background(), roomy, []*catalog.Model{ledgerDear}, billing.Estimate{InputTokens: 100, MaxOutputTokens: 100}, ledgerNow)
	if err != nil {
		t.Fatal(err)
	}
	if !r.BillingFallback || r.Mode != apikey.UsageByModel || r.Micros != 100*3+100*15 {
		t.Errorf("reservation %+v, want a usage-by-model fallback of 1800 µ$", r)
	}
	if u := mustUser(t, s.Users, "u1"); u.PointsUsed != 0 || u.SpendMicros != 1800 {
		t.Errorf("held %d points, %d µ$; want 0 and 1800", u.PointsUsed, u.SpendMicros)
	}
}

func ledgerStaleCache(t *testing.T, s LedgerStores) {
	l := newLedger(t, s, ledgerUser(4, false, 0)) // the user is cached for an hour from here
	ctx := context.Background()
	admit := func() error {
		_, err := l.Admit(ctx, roomy, []*catalog.Model{ledgerDear}, billing.Estimate{}, ledgerNow)
		return err
	}
	if err := admit(); err != nil {
		t.Fatal(err)
	}
	// Raised behind the cache's back: the refusal the cache would give is checked on a fresh read.
	if _, err := s.Users.UpdateUser(ctx, "u1", func(u *billing.User) error { u.MonthlyPoints = 8; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := admit(); err != nil {
		t.Fatalf("after the allowance was raised: %v", err)
	}
	// Lowered: the cached allowance no longer matches, so the write is refused, not over-spent.
	if _, err := s.Users.UpdateUser(ctx, "u1", func(u *billing.User) error { u.MonthlyPoints = 0; u.PointsUsed = 0; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := admit(); !isKind(err, fault.QuotaExceeded) {
		t.Fatalf("after the allowance was cut to 0: %v, want QuotaExceeded", err)
	}
	// Usage-by-model switched on: the fallback is found on the fresh read.
	if _, err := s.Users.UpdateUser(ctx, "u1", func(u *billing.User) error { u.UsageByModel, u.DollarLimitMicros = true, 1_000_000; return nil }); err != nil {
		t.Fatal(err)
	}
	r, err := l.Admit(ctx, roomy, []*catalog.Model{ledgerDear}, billing.Estimate{}, ledgerNow)
	if err != nil || !r.BillingFallback {
		t.Fatalf("after usage-by-model was enabled: %+v, %v; want a fallback", r, err)
	}
	if got := mustCounts(t, s.Counts, "k1", limits.Windows(roomy, ledgerNow)); got[0] != 3 {
		t.Errorf("minute count %d, want the 3 admitted requests", got[0])
	}
}

func ledgerRollover(t *testing.T, s LedgerStores) {
	u := ledgerUser(5, false, 0)
	u.PointsUsed = 5
	l := newLedger(t, s, u)
	ctx := context.Background()
	if _, err := l.Admit(ctx, roomy, []*catalog.Model{ledgerCheap}, billing.Estimate{}, ledgerNow); !isKind(err, fault.QuotaExceeded) {
		t.Fatalf("an exhausted bucket: %v, want QuotaExceeded", err)
	}
	next := ledgerNow.AddDate(0, 1, 0)
	l.Biller.Now = func() time.Time { return next }
	if _, err := l.Admit(ctx, roomy, []*catalog.Model{ledgerCheap}, billing.Estimate{}, next); err != nil {
		t.Fatalf("after the renewal day: %v", err)
	}
	if got := mustUser(t, s.Users, "u1"); got.PointsUsed != 1 || !got.PeriodStart.Equal(billing.PeriodStart(u.RenewalDay, next)) {
		t.Errorf("after renewal: used %d, period %v", got.PointsUsed, got.PeriodStart)
	}
}

func ledgerNewUser(t *testing.T, s LedgerStores) {
	l := newLedger(t, s)
	if _, err := l.Admit(context.Background(), &apikey.Key{ID: "k9"}, []*catalog.Model{ledgerCheap}, billing.Estimate{}, ledgerNow); err != nil {
		t.Fatal(err)
	}
	if u := mustUser(t, s.Users, "key:k9"); u.MonthlyPoints != billing.DefaultUser.MonthlyPoints || u.PointsUsed != 1 {
		t.Errorf("created %+v", u)
	}
}

func ledgerSettleWithReceipt(t *testing.T, s LedgerStores) {
	l := newLedger(t, s, ledgerUser(100, false, 0))
	ctx := context.Background()
	chain := []*catalog.Model{ledgerDear, ledgerCheap}
	r, err := l.Admit(ctx, roomy, chain, billing.Estimate{}, ledgerNow)
	if err != nil {
		t.Fatal(err)
	}
	rec := receiptFixture("set_ledger", time.Now().Add(time.Hour))
	bill := r.Bill(ledgerCheap, &billing.Usage{})
	if err := l.Settle(ctx, r, &bill, &rec); err != nil {
		t.Fatal(err)
	}
	if got := mustUser(t, s.Users, "u1").PointsUsed; got != 1 {
		t.Errorf("points used %d after settling, want the served model's 1", got)
	}
	if got, err := s.Receipts.Receipt(ctx, "set_ledger"); err != nil || got.JWS != rec.JWS {
		t.Errorf("receipt %+v, %v; want it stored with the settlement", got, err)
	}

	// A receipt that cannot be stored takes the settlement with it.
	r2, err := l.Admit(ctx, roomy, chain, billing.Estimate{}, ledgerNow)
	if err != nil {
		t.Fatal(err)
	}
	dup := receiptFixture("set_ledger", time.Now().Add(time.Hour))
	dup.JWS = "forged"
	bill = r2.Bill(ledgerCheap, &billing.Usage{})
	if err := l.Settle(ctx, r2, &bill, &dup); !errors.Is(err, receipt.ErrExists) {
		t.Fatalf("settling with a taken bundle id = %v, want receipt.ErrExists", err)
	}
	if got := mustUser(t, s.Users, "u1").PointsUsed; got != 1+4 {
		t.Errorf("points used %d, want 5: the refused settlement left the reservation as it was", got)
	}
	if got, _ := s.Receipts.Receipt(ctx, "set_ledger"); got.JWS != rec.JWS {
		t.Errorf("the first receipt was overwritten: %+v", got)
	}

	// Released with no receipt, and a receipt with nothing billed.
	if err := l.Settle(ctx, r2, nil, nil); err != nil {
		t.Fatal(err)
	}
	alone := receiptFixture("set_alone", time.Now().Add(time.Hour))
	if err := l.Settle(ctx, nil, nil, &alone); err != nil {
		t.Fatal(err)
	}
	if got := mustUser(t, s.Users, "u1").PointsUsed; got != 1 {
		t.Errorf("points used %d after the release, want 1", got)
	}
	if _, err := s.Receipts.Receipt(ctx, "set_alone"); err != nil {
		t.Errorf("a receipt settled alone: %v", err)
	}
}

// admitBefore admits a dear request whose context ends in a minute (its hold expires a margin
// after that) and returns the reservation.
func admitBefore(t *testing.T, l *ledger.Ledger) *billing.Reservation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := l.Admit(ctx, roomy, []*catalog.Model{ledgerDear}, billing.Estimate{}, ledgerNow)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustRefund(t *testing.T, s LedgerStores, now time.Time) int {
	t.Helper()
	n, err := s.Ledger.RefundExpired(context.Background(), now)
	if err != nil {
		t.Fatalf("RefundExpired: %v", err)
	}
	return n
}

func ledgerRefundExpired(t *testing.T, s LedgerStores) {
	l := newLedger(t, s, ledgerUser(100, false, 0))
	r := admitBefore(t, l)
	if n := mustRefund(t, s, time.Now()); n != 0 || mustUser(t, s.Users, "u1").PointsUsed != 4 {
		t.Fatalf("before its deadline: %d refunded, want none and 4 points held", n)
	}
	late := time.Now().Add(time.Minute + ledger.DefaultHoldMargin + time.Second)
	if n := mustRefund(t, s, late); n != 1 {
		t.Fatalf("after its deadline and the margin: %d refunded, want 1", n)
	}
	if got := mustUser(t, s.Users, "u1").PointsUsed; got != 0 {
		t.Errorf("points used %d after the refund, want 0", got)
	}
	if n := mustRefund(t, s, late.Add(time.Hour)); n != 0 || mustUser(t, s.Users, "u1").PointsUsed != 0 {
		t.Errorf("a second sweep refunded %d more, want none", n)
	}
	// The request settles after all: billed what it cost, once, not its reservation less it.
	bill := r.Bill(ledgerCheap, &billing.Usage{})
	if err := l.Settle(context.Background(), r, &bill, nil); err != nil {
		t.Fatal(err)
	}
	if got := mustUser(t, s.Users, "u1").PointsUsed; got != 1 {
		t.Errorf("points used %d after a late settlement, want 1 (its bill)", got)
	}
}

func ledgerSettledNotRefunded(t *testing.T, s LedgerStores) {
	l := newLedger(t, s, ledgerUser(100, false, 0))
	r := admitBefore(t, l)
	bill := r.Bill(ledgerCheap, &billing.Usage{})
	if err := l.Settle(context.Background(), r, &bill, nil); err != nil {
		t.Fatal(err)
	}
	if n := mustRefund(t, s, time.Now().Add(24*time.Hour)); n != 0 {
		t.Errorf("%d settled reservations refunded, want none", n)
	}
	if got := mustUser(t, s.Users, "u1").PointsUsed; got != 1 {
		t.Errorf("points used %d, want 1 (the bill)", got)
	}
}

func ledgerRefundRace(t *testing.T, s LedgerStores) {
	const n = 20
	l := newLedger(t, s, ledgerUser(1000, false, 0))
	rs := make([]*billing.Reservation, n)
	for i := range rs {
		rs[i] = admitBefore(t, l)
	}
	late := time.Now().Add(time.Hour) // every hold expired: each settlement races the sweeps
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() {
			bill := r.Bill(ledgerCheap, &billing.Usage{})
			if err := l.Settle(context.Background(), r, &bill, nil); err != nil {
				t.Errorf("Settle: %v", err)
			}
		})
	}
	for range 3 {
		wg.Go(func() {
			if _, err := s.Ledger.RefundExpired(context.Background(), late); err != nil {
				t.Errorf("RefundExpired: %v", err)
			}
		})
	}
	wg.Wait()
	mustRefund(t, s, late)
	if got := mustUser(t, s.Users, "u1").PointsUsed; got != n {
		t.Errorf("points used %d, want %d: each request billed its 1 point exactly once", got, n)
	}
}

// ledgerReserveHeld: what a request reserves after its admission — a hedge, a resumed stream's
// continuation — is a hold of its own, refunded once if its process dies before it settles, like
// the admitted reservation beside it; it counts the request in no window again, and a quota that
// cannot pay for it refuses it holding nothing.
func ledgerReserveHeld(t *testing.T, s LedgerStores) {
	l := newLedger(t, s, ledgerUser(10, false, 0))
	admitBefore(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hedge, err := l.Reserve(ctx, roomy, []*catalog.Model{ledgerDear}, billing.Estimate{}, ledgerNow)
	if err != nil {
		t.Fatal(err)
	}
	u := mustUser(t, s.Users, "u1")
	if _, held := u.Holds[hedge.HoldID]; u.PointsUsed != 8 || len(u.Holds) != 2 || !held {
		t.Fatalf("after the admission and a hedge: %d points used, holds %v; want 8, two holds, one the hedge's %q", u.PointsUsed, u.Holds, hedge.HoldID)
	}
	if got := mustCounts(t, s.Counts, "k1", limits.Windows(roomy, ledgerNow)); !slices.Equal(got, []int{1, 1, 1, 1}) {
		t.Errorf("counts %v, want the one admitted request in every window", got)
	}
	if _, err := l.Reserve(ctx, roomy, []*catalog.Model{ledgerDear}, billing.Estimate{}, ledgerNow); !isKind(err, fault.QuotaExceeded) {
		t.Fatalf("a second hedge with 2 of 10 points left: %v, want QuotaExceeded", err)
	}
	if u := mustUser(t, s.Users, "u1"); u.PointsUsed != 8 || len(u.Holds) != 2 {
		t.Fatalf("after a refused hedge: %d points used, %d holds; want 8 and 2", u.PointsUsed, len(u.Holds))
	}
	// The process dies: neither settles. Both are refunded after the deadline and the margin.
	late := time.Now().Add(time.Minute + ledger.DefaultHoldMargin + time.Second)
	if n := mustRefund(t, s, late); n != 2 {
		t.Fatalf("after the deadline and the margin: %d refunded, want 2 (the request's and the hedge's)", n)
	}
	// Released late (the hedge's attempt ended after all): nothing is given back twice.
	if err := hedge.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if u := mustUser(t, s.Users, "u1"); u.PointsUsed != 0 || len(u.Holds) != 0 {
		t.Errorf("after the refunds and a late release: %d points used, holds %v; want 0 and none", u.PointsUsed, u.Holds)
	}
}

func ledgerThresholdsOnce(t *testing.T, s LedgerStores) {
	// Two ledgers stand for two instances (Lambda environments), each with its own cache of
	// the user; 40 requests of 1 point each against 40 points cross 50, 80 and 100 %.
	mustCreateUser(t, s.Users, ledgerUser(40, false, 0))
	var mu sync.Mutex
	var crossed []billing.Crossing
	ledgers := make([]*ledger.Ledger, 2)
	for i := range ledgers {
		ledgers[i] = newLedger(t, s)
		ledgers[i].Crossed = func(_ context.Context, c billing.Crossing) {
			mu.Lock()
			crossed = append(crossed, c)
			mu.Unlock()
		}
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			l := ledgers[i%2]
			r, err := l.Admit(ctx, roomy, []*catalog.Model{ledgerCheap}, billing.Estimate{}, ledgerNow)
			if err != nil {
				t.Errorf("Admit: %v", err)
				return
			}
			bill := r.Bill(ledgerCheap, &billing.Usage{})
			var rec *receipt.Record // half settle with a receipt: in DynamoDB, a transaction
			if i%4 < 2 {
				rc := receiptFixture(fmt.Sprintf("set_threshold_%d", i), time.Now().Add(time.Hour))
				rec = &rc
			}
			if err := l.Settle(ctx, r, &bill, rec); err != nil {
				t.Errorf("Settle: %v", err)
			}
		})
	}
	wg.Wait()
	// The last settlements may have decided on a cache that was behind: one more request on each
	// instance, refused at 100 %, reads the record and announces what is left, and nothing twice.
	for _, l := range ledgers {
		r, err := l.Reserve(ctx, roomy, []*catalog.Model{ledgerCheap}, billing.Estimate{}, ledgerNow)
		if err == nil {
			err = l.Settle(ctx, r, nil, nil)
		}
		if err != nil && !isKind(err, fault.QuotaExceeded) {
			t.Errorf("a last request: %v", err)
		}
	}
	got := map[int]int{}
	for _, c := range crossed {
		got[c.Threshold]++
		if c.UserID != "u1" || c.Dollars || c.Limit != 40 || c.Spend < (40*int64(c.Threshold)+99)/100 || c.Spend > 40 || !c.PeriodStart.Equal(ledgerUser(40, false, 0).PeriodStart) {
			t.Errorf("crossing %+v", c)
		}
	}
	if want := map[int]int{50: 1, 80: 1, 100: 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("announced thresholds %v, want each of 50, 80, 100 exactly once", got)
	}
	if u := mustUser(t, s.Users, "u1"); u.PointsUsed != 40 || u.PointsAlerted != billing.Mark(u.PeriodStart, 100) {
		t.Errorf("user after the thresholds: used %d, mark %q", u.PointsUsed, u.PointsAlerted)
	}
}
