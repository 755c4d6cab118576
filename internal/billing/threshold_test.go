package billing_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/fault"
)

func TestNormalizeThresholds(t *testing.T) {
	got, err := billing.NormalizeThresholds([]int{100, 50, 80, 50})
	if err != nil || !reflect.DeepEqual(got, []int{50, 80, 100}) {
		t.Errorf("NormalizeThresholds = %v, %v; want [50 80 100]", got, err)
	}
	if got, err := billing.NormalizeThresholds([]int{}); err != nil || got == nil || len(got) != 0 {
		t.Errorf("no thresholds = %#v, %v; want an empty list (none)", got, err)
	}
	for _, bad := range [][]int{{0}, {101}, {-5}, make([]int, billing.MaxThresholds+1)} {
		_, err := billing.NormalizeThresholds(bad)
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Param != "budgetThresholds" {
			t.Errorf("NormalizeThresholds(%v) = %v, want an invalid budgetThresholds", bad, err)
		}
	}
}

func TestClaimFor(t *testing.T) {
	period := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	u := &billing.User{ID: "u1", MonthlyPoints: 10, PeriodStart: period, PointsUsed: 4}
	c := billing.Charge{Period: period}
	if claim, _ := billing.ClaimFor(u, c, false); claim != nil {
		t.Fatalf("4 of 10 claims %+v", claim)
	}
	// One settlement reaching 80 % announces 50 and 80 in one claim, decided on the mark it read.
	c.Points = 4
	claim, crossed := billing.ClaimFor(u, c, false)
	if claim == nil || claim.Mark != billing.Mark(period, 80) || claim.Level != 8 || claim.Was != "" || len(crossed) != 2 ||
		crossed[0].Threshold != 50 || crossed[1].Threshold != 80 || crossed[1].Spend != 8 || crossed[1].Limit != 10 {
		t.Fatalf("ClaimFor = %+v, %+v", claim, crossed)
	}
	if err := (billing.Charge{Period: period, Points: 4, Claim: claim}).Apply(u); err != nil || u.PointsAlerted != claim.Mark {
		t.Fatalf("Apply = %v, mark %q", err, u.PointsAlerted)
	}
	// Announced: nothing more until 100 %.
	if claim, _ := billing.ClaimFor(u, billing.Charge{Period: period, Points: 1}, false); claim != nil {
		t.Errorf("9 of 10 after 80 %% claims %+v", claim)
	}
	// A mark of the previous period counts as none.
	u.PointsAlerted = billing.Mark(period.AddDate(0, -1, 0), 100)
	if claim, crossed := billing.ClaimFor(u, billing.Charge{Period: period}, false); claim == nil || len(crossed) != 2 || claim.Was != u.PointsAlerted {
		t.Errorf("after a new period: %+v, %+v", claim, crossed)
	}
	// No thresholds, no limit, or dollars off: nothing.
	for _, v := range []billing.User{{BudgetThresholds: []int{}, MonthlyPoints: 10, PointsUsed: 10}, {PointsUsed: 10}} {
		v.PeriodStart = period
		if claim, _ := billing.ClaimFor(&v, billing.Charge{Period: period}, false); claim != nil {
			t.Errorf("%+v claims %+v", v, claim)
		}
	}
	if claim, _ := billing.ClaimFor(&billing.User{PeriodStart: period, DollarLimitMicros: 10, SpendMicros: 10}, billing.Charge{Period: period}, true); claim != nil {
		t.Errorf("usage-by-model off claims %+v", claim)
	}
}
