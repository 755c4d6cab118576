package storetest

// The billing store contract (billing.Store), and the reservation rule that needs a real store:
// concurrent requests never reserve more than the bucket holds.

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/fault"
)

// RunUsers runs the billing store contract. newStore must return an empty store isolated from
// every other call's, and register its own cleanup.
func RunUsers(t *testing.T, newStore func(t *testing.T) billing.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s billing.Store)
	}{
		{"every field round-trips exactly", usersRoundTrip},
		{"unknown id is ErrNotFound", usersNotFound},
		{"a second user with the same id is refused", usersDuplicate},
		{"update changes the record; a failing update writes nothing", usersUpdate},
		{"a charge within its cap is applied", usersChargeFits},
		{"a charge over its cap, or decided on settings since changed, is refused and writes nothing", usersChargeOverCap},
		{"a charge for another period is refused", usersChargeStale},
		{"a user with no quota holds any points, only while it has none", usersNoQuota},
		{"an uncapped charge may go negative or past the cap", usersChargeUncapped},
		{"an admin edit racing charges loses none of them", usersUpdateRacingCharges},
		{"50 concurrent reservations with room for 10 hold exactly 10", usersConcurrentReserve},
		{"budget thresholds round-trip: unset, none, and set apart", usersThresholdsRoundTrip},
		{"a threshold claim is won with its charge once, and refused writing nothing", usersThresholdClaim},
		{"every user is listed once, by id, as last written", usersList},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newStore(t))
		})
	}
}

var userPeriod = time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC)

func usersList(t *testing.T, s billing.Store) {
	l, ok := s.(billing.Lister)
	if !ok {
		t.Fatal("the store cannot list its users (billing.Lister)")
	}
	ctx := context.Background()
	if got, err := l.ListUsers(ctx); err != nil || len(got) != 0 {
		t.Fatalf("an empty store lists %v, %v", got, err)
	}
	for _, id := range []string{"u2", "key:key_1", "u1"} {
		mustCreateUser(t, s, userFixture(id))
	}
	if _, err := s.UpdateUser(ctx, "u2", func(u *billing.User) error { u.MonthlyPoints = 5; return nil }); err != nil {
		t.Fatal(err)
	}
	got, err := l.ListUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, u := range got {
		ids = append(ids, u.ID)
	}
	if strings.Join(ids, ",") != "key:key_1,u1,u2" || got[2].MonthlyPoints != 5 {
		t.Errorf("listed %v (u2's allowance %d), want key:key_1,u1,u2 and u2 as updated", ids, got[len(got)-1].MonthlyPoints)
	}
}

func userFixture(id string) *billing.User {
	return &billing.User{ID: id, MonthlyPoints: 100, RenewalDay: 15, PeriodStart: userPeriod, PointsUsed: 7,
		UsageByModel: true, DollarLimitMicros: 25_000_000, SpendMicros: 1_234_567,
		CreatedAt: time.Date(2026, 10, 15, 8, 0, 0, 123456789, time.UTC)}
}

func mustCreateUser(t *testing.T, s billing.Store, u *billing.User) {
	t.Helper()
	if err := s.CreateUser(context.Background(), u); err != nil {
		t.Fatalf("CreateUser(%s): %v", u.ID, err)
	}
}

func mustUser(t *testing.T, s billing.Store, id string) *billing.User {
	t.Helper()
	u, err := s.User(context.Background(), id)
	if err != nil {
		t.Fatalf("User(%s): %v", id, err)
	}
	return u
}

func sameUser(t *testing.T, what string, got, want *billing.User) {
	t.Helper()
	g, w := *got, *want
	g.PeriodStart, g.CreatedAt = g.PeriodStart.UTC(), g.CreatedAt.UTC()
	w.PeriodStart, w.CreatedAt = w.PeriodStart.UTC(), w.CreatedAt.UTC()
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

func usersRoundTrip(t *testing.T, s billing.Store) {
	want := userFixture("u1")
	mustCreateUser(t, s, want)
	sameUser(t, "User", mustUser(t, s, "u1"), want)
}

func usersNotFound(t *testing.T, s billing.Store) {
	ctx := context.Background()
	if _, err := s.User(ctx, "nobody"); !errors.Is(err, billing.ErrNotFound) {
		t.Errorf("User(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := s.UpdateUser(ctx, "nobody", func(*billing.User) error { return nil }); !errors.Is(err, billing.ErrNotFound) {
		t.Errorf("UpdateUser(unknown) = %v, want ErrNotFound", err)
	}
	if err := s.Charge(ctx, "nobody", billing.Charge{Period: userPeriod, Points: 1}); err == nil {
		t.Error("Charge(unknown) succeeded")
	}
	if _, err := s.User(ctx, "nobody"); !errors.Is(err, billing.ErrNotFound) {
		t.Errorf("a charge to an unknown user created it: User = %v", err)
	}
}

func usersDuplicate(t *testing.T, s billing.Store) {
	want := userFixture("u1")
	mustCreateUser(t, s, want)
	other := userFixture("u1")
	other.MonthlyPoints = 1
	if err := s.CreateUser(context.Background(), other); !errors.Is(err, billing.ErrExists) {
		t.Fatalf("CreateUser(duplicate) = %v, want ErrExists", err)
	}
	sameUser(t, "the first user after the refused create", mustUser(t, s, "u1"), want)
}

func usersUpdate(t *testing.T, s billing.Store) {
	ctx := context.Background()
	want := userFixture("u1")
	mustCreateUser(t, s, want)
	errNo := errors.New("no")
	if _, err := s.UpdateUser(ctx, "u1", func(u *billing.User) error { u.MonthlyPoints = 1; return errNo }); !errors.Is(err, errNo) {
		t.Fatalf("UpdateUser = %v, want the update's error", err)
	}
	sameUser(t, "after a failing update", mustUser(t, s, "u1"), want)
	got, err := s.UpdateUser(ctx, "u1", func(u *billing.User) error { u.MonthlyPoints, u.UsageByModel = 500, false; return nil })
	if err != nil {
		t.Fatal(err)
	}
	want.MonthlyPoints, want.UsageByModel = 500, false
	sameUser(t, "UpdateUser's result", got, want)
	sameUser(t, "after update", mustUser(t, s, "u1"), want)
	if _, err := s.UpdateUser(ctx, "u1", func(u *billing.User) error { u.ID = "u2"; return nil }); err == nil {
		t.Error("UpdateUser changing the id succeeded")
	}
}

func usersChargeFits(t *testing.T, s billing.Store) {
	mustCreateUser(t, s, userFixture("u1"))
	// Exactly to the cap: 7 used + 93 = 100.
	if err := s.Charge(context.Background(), "u1", billing.Charge{Period: userPeriod, Points: 93, Capped: true, PointsCap: 100}); err != nil {
		t.Fatalf("Charge to exactly the cap: %v", err)
	}
	if err := s.Charge(context.Background(), "u1", billing.Charge{Period: userPeriod, Micros: 23_765_433, Capped: true, PointsCap: 100, MicrosCap: 25_000_000}); err != nil {
		t.Fatalf("Charge of micros to exactly the cap: %v", err)
	}
	if u := mustUser(t, s, "u1"); u.PointsUsed != 100 || u.SpendMicros != 25_000_000 {
		t.Errorf("after charges: points %d micros %d, want 100 and 25000000", u.PointsUsed, u.SpendMicros)
	}
}

func usersChargeOverCap(t *testing.T, s billing.Store) {
	want := userFixture("u1")
	mustCreateUser(t, s, want)
	for name, c := range map[string]billing.Charge{
		"points": {Period: userPeriod, Points: 94, Capped: true, PointsCap: 100},
		"micros": {Period: userPeriod, Micros: 23_765_434, Capped: true, PointsCap: 100, MicrosCap: 25_000_000},
		// Decided on settings the record no longer has (a stale cache, an admin's edit since):
		// refused even though the amount would fit.
		"points, decided on another allowance": {Period: userPeriod, Points: 1, Capped: true, PointsCap: 200},
		"micros, decided on another budget":    {Period: userPeriod, Micros: 1, Capped: true, PointsCap: 100, MicrosCap: 30_000_000},
		"micros, decided on another allowance": {Period: userPeriod, Micros: 1, Capped: true, PointsCap: 99, MicrosCap: 25_000_000},
	} {
		if err := s.Charge(context.Background(), "u1", c); !errors.Is(err, billing.ErrInsufficient) {
			t.Errorf("%s over the cap: %v, want ErrInsufficient", name, err)
		}
	}
	sameUser(t, "after refused charges", mustUser(t, s, "u1"), want)
	ctx := context.Background()
	if _, err := s.UpdateUser(ctx, "u1", func(u *billing.User) error { u.UsageByModel = false; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Charge(ctx, "u1", billing.Charge{Period: userPeriod, Micros: 1, Capped: true, PointsCap: 100, MicrosCap: 25_000_000}); !errors.Is(err, billing.ErrInsufficient) {
		t.Errorf("micros with usage-by-model off: %v, want ErrInsufficient", err)
	}
}

func usersNoQuota(t *testing.T, s billing.Store) {
	ctx := context.Background()
	u := userFixture("u1")
	u.MonthlyPoints = billing.NoQuota
	mustCreateUser(t, s, u)
	if err := s.Charge(ctx, "u1", billing.Charge{Period: userPeriod, Points: 1_000_000, Capped: true, PointsCap: billing.NoQuota}); err != nil {
		t.Fatalf("a million points for a user with no quota: %v", err)
	}
	if got := mustUser(t, s, "u1"); got.PointsUsed != u.PointsUsed+1_000_000 || got.HasQuota() {
		t.Errorf("points used %d (quota %d), want %d counted and still no quota", got.PointsUsed, got.MonthlyPoints, u.PointsUsed+1_000_000)
	}
	// A decision made while it had none is refused once an admin gives it a quota, and the
	// other way round.
	if _, err := s.UpdateUser(ctx, "u1", func(u *billing.User) error { u.MonthlyPoints = 2_000_000; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Charge(ctx, "u1", billing.Charge{Period: userPeriod, Points: 1, Capped: true, PointsCap: billing.NoQuota}); !errors.Is(err, billing.ErrInsufficient) {
		t.Errorf("a charge decided on no quota, after a quota was set: %v, want ErrInsufficient", err)
	}
	if _, err := s.UpdateUser(ctx, "u1", func(u *billing.User) error { u.MonthlyPoints = billing.NoQuota; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Charge(ctx, "u1", billing.Charge{Period: userPeriod, Points: 1, Capped: true, PointsCap: 2_000_000}); !errors.Is(err, billing.ErrInsufficient) {
		t.Errorf("a charge decided on a quota, after it was lifted: %v, want ErrInsufficient", err)
	}
}

func usersChargeStale(t *testing.T, s billing.Store) {
	want := userFixture("u1")
	mustCreateUser(t, s, want)
	err := s.Charge(context.Background(), "u1", billing.Charge{Period: userPeriod.AddDate(0, 1, 0), Points: 1})
	if !errors.Is(err, billing.ErrStalePeriod) {
		t.Errorf("Charge for the next period = %v, want ErrStalePeriod", err)
	}
	sameUser(t, "after a stale charge", mustUser(t, s, "u1"), want)
}

func usersChargeUncapped(t *testing.T, s billing.Store) {
	mustCreateUser(t, s, userFixture("u1"))
	ctx := context.Background()
	if err := s.Charge(ctx, "u1", billing.Charge{Period: userPeriod, Points: 500, Micros: -234_567}); err != nil {
		t.Fatal(err)
	}
	if u := mustUser(t, s, "u1"); u.PointsUsed != 507 || u.SpendMicros != 1_000_000 {
		t.Errorf("points %d micros %d, want 507 and 1000000", u.PointsUsed, u.SpendMicros)
	}
}

func usersUpdateRacingCharges(t *testing.T, s billing.Store) {
	mustCreateUser(t, s, userFixture("u1"))
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if err := s.Charge(ctx, "u1", billing.Charge{Period: userPeriod, Points: 1}); err != nil {
				t.Errorf("Charge: %v", err)
			}
		})
	}
	wg.Go(func() {
		if _, err := s.UpdateUser(ctx, "u1", func(u *billing.User) error { u.MonthlyPoints = 300; return nil }); err != nil {
			t.Errorf("UpdateUser: %v", err)
		}
	})
	wg.Wait()
	if u := mustUser(t, s, "u1"); u.PointsUsed != 17 || u.MonthlyPoints != 300 {
		t.Errorf("points used %d allowance %d, want 17 and 300", u.PointsUsed, u.MonthlyPoints)
	}
}

func usersConcurrentReserve(t *testing.T, s billing.Store) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	u := billing.NewUser("u1", billing.Defaults{MonthlyPoints: 40}, now)
	mustCreateUser(t, s, u)
	b := &billing.Biller{Store: s, Now: func() time.Time { return now }}
	key := &apikey.Key{ID: "k1", UserID: "u1"}
	chain := []*catalog.Model{{Name: "a/cheap", Points: 1}, {Name: "a/dear", Points: 4}} // room for 10 at 4
	var held atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			_, err := b.Reserve(context.Background(), key, chain, billing.Estimate{})
			var fe *fault.Error
			switch {
			case err == nil:
				held.Add(1)
			case errors.As(err, &fe) && fe.K == fault.QuotaExceeded:
			default:
				t.Errorf("Reserve: %v", err)
			}
		})
	}
	wg.Wait()
	if n := held.Load(); n != 10 {
		t.Errorf("%d reservations succeeded, want exactly 10", n)
	}
	if got := mustUser(t, s, "u1").PointsUsed; got != 40 {
		t.Errorf("points used %d, want 40", got)
	}
}

func usersThresholdsRoundTrip(t *testing.T, s billing.Store) {
	ctx := context.Background()
	for id, th := range map[string][]int{"unset": nil, "none": {}, "set": {25, 90}} {
		u := userFixture(id)
		u.BudgetThresholds = th
		mustCreateUser(t, s, u)
		got := mustUser(t, s, id)
		if (got.BudgetThresholds == nil) != (th == nil) || !reflect.DeepEqual(got.Thresholds(), u.Thresholds()) {
			t.Errorf("%s: BudgetThresholds read back %#v, want %#v", id, got.BudgetThresholds, th)
		}
		// An admin edit of another field keeps them.
		if _, err := s.UpdateUser(ctx, id, func(u *billing.User) error { u.MonthlyPoints++; return nil }); err != nil {
			t.Fatal(err)
		}
		if got = mustUser(t, s, id); (got.BudgetThresholds == nil) != (th == nil) || !reflect.DeepEqual(got.Thresholds(), u.Thresholds()) {
			t.Errorf("%s: after an update BudgetThresholds read back %#v, want %#v", id, got.BudgetThresholds, th)
		}
	}
}

func usersThresholdClaim(t *testing.T, s billing.Store) {
	ctx := context.Background()
	u := userFixture("u1") // 7 of 100 points used
	mustCreateUser(t, s, u)
	mark := billing.Mark(userPeriod, 50)
	// The count does not reach the level with this charge: refused, nothing written.
	claim := &billing.Claim{Mark: mark, Level: 50}
	if err := s.Charge(ctx, "u1", billing.Charge{Period: userPeriod, Points: 42, Claim: claim}); !errors.Is(err, billing.ErrClaimLost) {
		t.Fatalf("a claim below its level = %v, want ErrClaimLost", err)
	}
	if got := mustUser(t, s, "u1"); got.PointsUsed != 7 || got.PointsAlerted != "" {
		t.Fatalf("a refused claim wrote: %+v", got)
	}
	// Reaching it: the charge and the mark in one write.
	if err := s.Charge(ctx, "u1", billing.Charge{Period: userPeriod, Points: 43, Claim: claim}); err != nil {
		t.Fatalf("a claim reaching its level: %v", err)
	}
	if got := mustUser(t, s, "u1"); got.PointsUsed != 50 || got.PointsAlerted != mark {
		t.Fatalf("after the won claim: used %d, mark %q; want 50 and %q", got.PointsUsed, got.PointsAlerted, mark)
	}
	// The same claim again (another settlement that read the record before): lost.
	if err := s.Charge(ctx, "u1", billing.Charge{Period: userPeriod, Points: 1, Claim: claim}); !errors.Is(err, billing.ErrClaimLost) {
		t.Fatalf("a second claim of a taken threshold = %v, want ErrClaimLost", err)
	}
	// The dollar budget's mark is its own, and a claim decided on the taken mark holds.
	dollars := &billing.Claim{Dollars: true, Mark: billing.Mark(userPeriod, 80), Level: 20_000_000}
	if err := s.Charge(ctx, "u1", billing.Charge{Period: userPeriod, Micros: 20_000_000, Claim: dollars}); err != nil {
		t.Fatalf("a dollar claim: %v", err)
	}
	next := &billing.Claim{Was: mark, Mark: billing.Mark(userPeriod, 100), Level: 100}
	if err := s.Charge(ctx, "u1", billing.Charge{Period: userPeriod, Points: 50, Claim: next}); err != nil {
		t.Fatalf("the next points claim: %v", err)
	}
	got := mustUser(t, s, "u1")
	if got.PointsUsed != 100 || got.PointsAlerted != next.Mark || got.BudgetAlerted != dollars.Mark || got.SpendMicros != 21_234_567 {
		t.Errorf("after the claims: %+v", got)
	}
	// A claim never lets a stale period through.
	if err := s.Charge(ctx, "u1", billing.Charge{Period: userPeriod.AddDate(0, 1, 0), Points: 1, Claim: &billing.Claim{Mark: "x"}}); !errors.Is(err, billing.ErrStalePeriod) {
		t.Errorf("a claim for another period = %v, want ErrStalePeriod", err)
	}
}
