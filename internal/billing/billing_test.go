package billing_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
)

var (
	now   = time.Date(2026, 12, 10, 12, 0, 0, 0, time.UTC)
	cheap = &catalog.Model{Name: "demo/cheap", Points: 1, Pricing: catalog.Pricing{InputPer1M: 0.5, OutputPer1M: 1}}
	dear  = &catalog.Model{Name: "demo/dear", Points: 5, Pricing: catalog.Pricing{InputPer1M: 3, OutputPer1M: 15}}
)

func newBiller(t *testing.T, users ...*billing.User) *billing.Biller {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "gateway.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, u := range users {
		if err := s.CreateUser(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	return &billing.Biller{Store: s, Now: func() time.Time { return now }}
}

func user(points int64, usageByModel bool, dollars float64) *billing.User {
	u := billing.NewUser("u1", billing.Defaults{MonthlyPoints: points, UsageByModel: usageByModel, DollarLimitMicros: billing.Micros(dollars)}, now)
	return u
}

func stored(t *testing.T, b *billing.Biller) *billing.User {
	t.Helper()
	u, err := b.Store.User(context.Background(), "u1")
	if err != nil {
		t.Fatal(err)
	}
	return u
}

var (
	pointsKey = &apikey.Key{ID: "k1", UserID: "u1"}
	dollarKey = &apikey.Key{ID: "k2", UserID: "u1", BillingMode: apikey.UsageByModel}
)

func TestAFailoverBillsOnlyTheServedModel(t *testing.T) {
	ctx := context.Background()
	t.Run("points", func(t *testing.T) {
		b := newBiller(t, user(100, false, 0))
		r, err := b.Reserve(ctx, pointsKey, []*catalog.Model{dear, cheap}, billing.Estimate{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Points != 5 || stored(t, b).PointsUsed != 5 {
			t.Fatalf("reserved %d points (stored %d), want the dearest model's 5", r.Points, stored(t, b).PointsUsed)
		}
		bill, err := r.Settle(ctx, cheap, &billing.Usage{InputTokens: 10, OutputTokens: 20})
		if err != nil {
			t.Fatal(err)
		}
		if bill.Points != 1 || stored(t, b).PointsUsed != 1 {
			t.Errorf("billed %d points (stored %d), want the served model's 1", bill.Points, stored(t, b).PointsUsed)
		}
	})
	t.Run("dollars", func(t *testing.T) {
		b := newBiller(t, user(0, true, 10))
		r, err := b.Reserve(ctx, dollarKey, []*catalog.Model{dear, cheap}, billing.Estimate{InputTokens: 1000, MaxOutputTokens: 500})
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(1000*3 + 500*15); r.Micros != want {
			t.Fatalf("reserved %d µ$, want the dearest estimate %d", r.Micros, want)
		}
		bill, err := r.Settle(ctx, cheap, &billing.Usage{InputTokens: 1000, OutputTokens: 300})
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(1000*0.5 + 300*1); bill.Micros != want || stored(t, b).SpendMicros != want || bill.Estimated {
			t.Errorf("billed %d µ$ (stored %d, estimated %v), want %d", bill.Micros, stored(t, b).SpendMicros, bill.Estimated, want)
		}
	})
}

// Issue 34 item 13: a user with no quota is never refused for points; what it uses is still
// counted and billed.
func TestAUserWithNoQuotaIsCountedNeverRefused(t *testing.T) {
	ctx := context.Background()
	b := newBiller(t, user(billing.NoQuota, false, 0))
	for i := range 3 {
		big := &catalog.Model{Name: "demo/big", Points: 400}
		r, err := b.Reserve(ctx, pointsKey, []*catalog.Model{big}, billing.Estimate{})
		if err != nil {
			t.Fatalf("reservation %d: %v", i+1, err)
		}
		if _, err := r.Settle(ctx, big, &billing.Usage{InputTokens: 1, OutputTokens: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if u := stored(t, b); u.PointsUsed != 1200 || u.HasQuota() {
		t.Errorf("points used %d (allowance %d), want 1200 counted under no quota", u.PointsUsed, u.MonthlyPoints)
	}
	if q, err := b.Quote(ctx, pointsKey, []*catalog.Model{dear}, billing.Estimate{}); err != nil || q.User.HasQuota() {
		t.Errorf("quote: %+v, %v", q, err)
	}
	patch := billing.UserPatch{}
	if err := json.Unmarshal([]byte(`{"monthlyPoints":null}`), &patch); err != nil || !patch.MonthlyPoints.Null {
		t.Fatalf("a null allowance reads as %+v (%v)", patch.MonthlyPoints, err)
	}
	u := user(10, false, 0)
	if err := patch.Apply(u, now); err != nil || u.HasQuota() {
		t.Errorf("a null allowance applied: %d, %v; want no quota", u.MonthlyPoints, err)
	}
}

func TestRefusalsAreDeliberateQuotaBlocks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		user  *billing.User
		key   *apikey.Key
		title string
		code  string
	}{
		{"points exhausted, no usage-by-model", user(4, false, 0), pointsKey, "Completion limit exceeded", "points_exhausted"},
		{"points exhausted, budget too small to fall back", user(4, true, 0.001), pointsKey, "Completion limit exceeded", "points_exhausted"},
		{"usage-by-model key, budget exhausted", user(100, true, 0.001), dollarKey, "Usage by Model budget exceeded", "budget_exceeded"},
		{"usage-by-model key, usage-by-model off", user(100, false, 100), dollarKey, "Usage by Model required", "usage_by_model_required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBiller(t, tc.user)
			chain, est := []*catalog.Model{cheap, dear}, billing.Estimate{InputTokens: 100}
			_, qerr := b.Quote(context.Background(), tc.key, chain, est)
			_, err := b.Reserve(context.Background(), tc.key, chain, est)
			for name, err := range map[string]error{"Quote": qerr, "Reserve": err} {
				var fe *fault.Error
				if !errors.As(err, &fe) || fe.K != fault.QuotaExceeded || fe.Title != tc.title || fe.Code != tc.code {
					t.Errorf("%s = %#v, want QuotaExceeded %q", name, err, tc.title)
				}
			}
			if u := stored(t, b); u.PointsUsed != 0 || u.SpendMicros != 0 {
				t.Errorf("a refused request held %d points, %d µ$", u.PointsUsed, u.SpendMicros)
			}
		})
	}
}

func TestUserCompletionsFallsBackToUsageByModel(t *testing.T) {
	ctx := context.Background()
	b := newBiller(t, user(4, true, 5))
	r, err := b.Reserve(ctx, pointsKey, []*catalog.Model{dear}, billing.Estimate{InputTokens: 100, MaxOutputTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !r.BillingFallback || r.Mode != apikey.UsageByModel || r.Points != 0 || r.Micros == 0 {
		t.Fatalf("reservation %+v, want a usage-by-model fallback", r)
	}
	bill, err := r.Settle(ctx, dear, &billing.Usage{InputTokens: 100, OutputTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !bill.BillingFallback || bill.Micros != 100*3+10*15 || stored(t, b).PointsUsed != 0 {
		t.Errorf("bill %+v (points used %d), want dollars only", bill, stored(t, b).PointsUsed)
	}
}

func TestAFailedChainReleasesItsReservation(t *testing.T) {
	ctx := context.Background()
	b := newBiller(t, user(100, false, 0))
	r, err := b.Reserve(ctx, pointsKey, []*catalog.Model{dear}, billing.Estimate{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx, billing.Bill{}, b.Store.Charge); err != nil {
		t.Fatal(err)
	}
	if got := stored(t, b).PointsUsed; got != 0 {
		t.Errorf("points used after release %d, want 0", got)
	}
}

func TestSettleOrReleaseTakesEffectOnce(t *testing.T) {
	ctx := context.Background()
	b := newBiller(t, user(100, false, 0))
	r, err := b.Reserve(ctx, pointsKey, []*catalog.Model{dear}, billing.Estimate{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Settle(ctx, dear, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Settle(ctx, dear, nil); !errors.Is(err, billing.ErrClosed) {
		t.Errorf("second Settle = %v, want ErrClosed", err)
	}
	if err := r.Close(ctx, billing.Bill{}, b.Store.Charge); !errors.Is(err, billing.ErrClosed) {
		t.Errorf("Release after Settle = %v, want ErrClosed", err)
	}
	if got := stored(t, b).PointsUsed; got != 5 {
		t.Errorf("points used %d, want 5 (billed once)", got)
	}
}

func TestAStreamWithoutUsageIsBilledFromTheEstimate(t *testing.T) {
	b := newBiller(t, user(0, true, 10))
	r, err := b.Reserve(context.Background(), dollarKey, []*catalog.Model{cheap}, billing.Estimate{InputTokens: 200, MaxOutputTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	bill, err := r.Settle(context.Background(), cheap, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bill.Estimated || bill.Micros != 200*0.5+100*1 {
		t.Errorf("bill %+v, want the estimate 200 µ$, marked estimated", bill)
	}
}

func TestTheBucketRenewsOnTheRenewalDay(t *testing.T) {
	u := user(5, false, 0)
	u.PointsUsed = 5
	b := newBiller(t, u)
	if _, err := b.Reserve(context.Background(), pointsKey, []*catalog.Model{cheap}, billing.Estimate{}); err == nil {
		t.Fatal("an exhausted bucket admitted a request")
	}
	b.Now = func() time.Time { return now.AddDate(0, 1, 0) }
	if _, err := b.Reserve(context.Background(), pointsKey, []*catalog.Model{cheap}, billing.Estimate{}); err != nil {
		t.Fatalf("after the renewal day: %v", err)
	}
	if got := stored(t, b); got.PointsUsed != 1 || !got.PeriodStart.Equal(time.Date(2027, 1, 10, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("after renewal: used %d, period %v", got.PointsUsed, got.PeriodStart)
	}
}

func TestAnUnknownUserIsCreatedWithTheDefaults(t *testing.T) {
	b := newBiller(t)
	if _, err := b.Reserve(context.Background(), &apikey.Key{ID: "k9"}, []*catalog.Model{cheap}, billing.Estimate{}); err != nil {
		t.Fatal(err)
	}
	u, err := b.Store.User(context.Background(), "key:k9")
	if err != nil {
		t.Fatal(err)
	}
	if u.MonthlyPoints != billing.DefaultUser.MonthlyPoints || u.PointsUsed != 1 || u.RenewalDay != 10 {
		t.Errorf("created %+v", u)
	}
}

func TestUserPatchValidation(t *testing.T) {
	day0, day29, day3 := 0, 29, 3
	tooMuch, ok := 2e9, 12.5
	for _, tc := range []struct {
		name  string
		patch billing.UserPatch
		param string
	}{
		{"negative allowance", billing.UserPatch{MonthlyPoints: billing.SomeInt64(-1)}, "monthlyPoints"},
		{"renewal day 0", billing.UserPatch{RenewalDay: &day0}, "renewalDay"},
		{"renewal day 29", billing.UserPatch{RenewalDay: &day29}, "renewalDay"},
		{"dollar limit too large", billing.UserPatch{UsageByModel: &billing.UsageByModelPatch{DollarLimit: &tooMuch}}, "usageByModel.dollarLimit"},
		{"valid", billing.UserPatch{RenewalDay: &day3, UsageByModel: &billing.UsageByModelPatch{DollarLimit: &ok}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := user(10, false, 0)
			err := tc.patch.Apply(u, now)
			var fe *fault.Error
			if tc.param == "" {
				if err != nil || u.RenewalDay != 3 || u.DollarLimitMicros != 12_500_000 || !u.PeriodStart.Equal(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)) {
					t.Errorf("Apply = %v, user %+v", err, u)
				}
				return
			}
			if !errors.As(err, &fe) || fe.K != fault.InvalidRequest || fe.Param != tc.param {
				t.Errorf("Apply = %#v, want InvalidRequest naming %s", err, tc.param)
			}
		})
	}
}

func TestQuoteHoldsNothing(t *testing.T) {
	b := newBiller(t, user(100, false, 0))
	q, err := b.Quote(context.Background(), pointsKey, []*catalog.Model{cheap, dear}, billing.Estimate{})
	if err != nil {
		t.Fatal(err)
	}
	if q.PointsRequired != 5 || q.User.PointsRemaining() != 100 || q.Mode != apikey.UserCompletions || q.BillingFallback {
		t.Errorf("quote %+v", q)
	}
	if got := stored(t, b).PointsUsed; got != 0 {
		t.Errorf("a quote held %d points", got)
	}
}

// An attempt cancelled because the hedge beside it served (SPEC 3.5a) is billed for what it
// produced: in dollars, the prompt it was sent; in points, nothing — it gave no answer.
func TestACancelledHedgeIsBilledForItsPrompt(t *testing.T) {
	ctx := context.Background()
	t.Run("dollars", func(t *testing.T) {
		b := newBiller(t, user(0, true, 10))
		r, err := b.Reserve(ctx, dollarKey, []*catalog.Model{cheap}, billing.Estimate{InputTokens: 1000, MaxOutputTokens: 500})
		if err != nil {
			t.Fatal(err)
		}
		bill, err := r.SettleCancelled(ctx, dear)
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(1000 * 3); bill.Micros != want || stored(t, b).SpendMicros != want || !bill.Estimated || bill.Model != dear.Name {
			t.Errorf("bill %+v (stored %d µ$), want the prompt at dear's input price, %d µ$, estimated", bill, stored(t, b).SpendMicros, want)
		}
	})
	t.Run("points", func(t *testing.T) {
		b := newBiller(t, user(100, false, 0))
		r, err := b.Reserve(ctx, pointsKey, []*catalog.Model{dear}, billing.Estimate{InputTokens: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if bill, err := r.SettleCancelled(ctx, dear); err != nil || bill.Points != 0 || stored(t, b).PointsUsed != 0 {
			t.Errorf("bill %+v (%v), stored %d points; want nothing", bill, err, stored(t, b).PointsUsed)
		}
		if err := r.Release(ctx); !errors.Is(err, billing.ErrClosed) {
			t.Errorf("Release after SettleCancelled = %v, want ErrClosed", err)
		}
	})
}

// A charge opening or closing a hold leaves the record it was applied to a new holds map: a copy
// of the record taken before (the one a store is committing, or handed to a reader) keeps its own.
func TestChargeHoldsAreCopiedNotChanged(t *testing.T) {
	period := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	u := &billing.User{ID: "u", PeriodStart: period, MonthlyPoints: 100}
	open := func(id string, points int64) billing.Charge {
		return billing.Charge{Period: period, Points: points, Opens: id, Hold: billing.Hold{Period: period, Points: points}}
	}
	for _, id := range []string{"a", "b"} {
		if err := open(id, 10).Apply(u); err != nil {
			t.Fatal(err)
		}
	}
	before := *u
	if err := (billing.Charge{Period: period, Points: -10, Closes: "a"}).Apply(u); err != nil {
		t.Fatal(err)
	}
	if len(before.Holds) != 2 || len(u.Holds) != 1 || u.Holds["b"].Points != 10 || u.PointsUsed != 10 {
		t.Fatalf("after closing a: copy %v, record %v (%d used)", before.Holds, u.Holds, u.PointsUsed)
	}
	if err := (billing.Charge{Period: period, Points: -10, Closes: "b"}).Apply(u); err != nil {
		t.Fatal(err)
	}
	if u.Holds != nil || u.PointsUsed != 0 || len(before.Holds) != 2 {
		t.Errorf("after closing both: record %v (%d used), copy %v", u.Holds, u.PointsUsed, before.Holds)
	}
	if err := (billing.Charge{Period: period, Closes: "b"}).Apply(u); !errors.Is(err, billing.ErrHoldGone) {
		t.Errorf("closing a hold twice: %v", err)
	}
}
