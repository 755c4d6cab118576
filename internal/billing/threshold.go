package billing

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
)

// Budget thresholds (billing:budget_threshold): a user's spend in the period — the record's
// points used or dollar spend, as the limits count it (settled requests and those in flight) —
// first reaching a percentage of the period's allowance or budget is announced once per
// threshold and period. A settlement decides it: its charge carries a Claim of the highest
// threshold its count reaches, which the store checks and records in the same atomic write as
// the charge, so of concurrent settlements (in any process) exactly one announces each
// threshold, and a refused or released request announces nothing.

// DefaultThresholds are the thresholds of a user who set none: 50 %, 80 % and 100 %.
var DefaultThresholds = []int{50, 80, 100}

// MaxThresholds bounds a user's thresholds.
const MaxThresholds = 10

// NormalizeThresholds validates thresholds (each a percentage from 1 to 100, at most
// MaxThresholds) and returns them sorted without repeats, never nil (empty: none).
func NormalizeThresholds(thresholds []int) ([]int, error) {
	if len(thresholds) > MaxThresholds {
		return nil, fault.Invalid("budgetThresholds", fmt.Sprintf("budgetThresholds holds at most %d percentages (got %d)", MaxThresholds, len(thresholds)))
	}
	out := make([]int, 0, len(thresholds))
	for _, t := range thresholds {
		if t < 1 || t > 100 {
			return nil, fault.Invalid("budgetThresholds", fmt.Sprintf("budgetThresholds are percentages from 1 to 100 (got %d)", t))
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Thresholds are u's thresholds in effect: its own, or DefaultThresholds when it set none.
func (u *User) Thresholds() []int {
	if u.BudgetThresholds == nil {
		return DefaultThresholds
	}
	return u.BudgetThresholds
}

// Alerted is the mark of the dollar budget (dollars) or of the points allowance.
func (u *User) Alerted(dollars bool) *string {
	if dollars {
		return &u.BudgetAlerted
	}
	return &u.PointsAlerted
}

// Mark is the record of threshold percent announced in the period starting at period.
func Mark(period time.Time, percent int) string {
	return period.UTC().Format(time.RFC3339) + "/" + strconv.Itoa(percent)
}

// announced is the highest threshold of mark in period, 0 for none (or a mark of another period).
func announced(mark string, period time.Time) int {
	p, pct, ok := strings.Cut(mark, "/")
	if !ok || p != period.UTC().Format(time.RFC3339) {
		return 0
	}
	n, _ := strconv.Atoi(pct)
	return n
}

// Claim is a settlement's claim to announce a threshold: it holds when the record's mark is
// still Was (the one the claim was decided on) and the count (points used, or for Dollars the
// spend) reaches Level with the charge; the store then sets the mark to Mark.
type Claim struct {
	Dollars bool
	Was     string
	Mark    string
	Level   int64
}

// Holds reports whether cl holds for charge c on u, before c is applied.
func (cl *Claim) Holds(u *User, c Charge) bool {
	used := u.PointsUsed + c.Points
	if cl.Dollars {
		used = u.SpendMicros + c.Micros
	}
	return *u.Alerted(cl.Dollars) == cl.Was && used >= cl.Level
}

// Crossing is one threshold a settlement announced.
type Crossing struct {
	UserID string
	// Dollars is the usage-by-model budget's threshold (Limit and Spend in micro-dollars); else
	// the points allowance's (in points).
	Dollars     bool
	Threshold   int // percent
	Limit       int64
	Spend       int64 // the count as the settlement saw it: at least the threshold's level
	PeriodStart time.Time
	PeriodEnd   time.Time
}

// level is the count at which threshold pct of limit is reached (at least 1).
func level(limit int64, pct int) int64 { return max(1, (limit*int64(pct)+99)/100) }

// ClaimFor is the claim a settlement charge c makes on u, the record as the caller knows it
// (c not applied): of the budget that pays (dollars: the usage-by-model budget), the highest
// threshold not yet announced that the count reaches with c, and the crossings it announces —
// every threshold above the one announced up to it. nil when there is none.
func ClaimFor(u *User, c Charge, dollars bool) (*Claim, []Crossing) {
	limit, used := u.MonthlyPoints, u.PointsUsed+c.Points
	if dollars {
		if !u.UsageByModel {
			return nil, nil
		}
		limit, used = u.DollarLimitMicros, u.SpendMicros+c.Micros
	}
	if limit <= 0 || !u.PeriodStart.Equal(c.Period) {
		return nil, nil
	}
	was := *u.Alerted(dollars)
	done := announced(was, u.PeriodStart)
	var out []Crossing
	for _, t := range u.Thresholds() {
		if t > done && used >= level(limit, t) {
			out = append(out, Crossing{UserID: u.ID, Dollars: dollars, Threshold: t, Limit: limit, Spend: used,
				PeriodStart: u.PeriodStart, PeriodEnd: u.NextRenewal()})
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	top := out[len(out)-1].Threshold
	return &Claim{Dollars: dollars, Was: was, Mark: Mark(u.PeriodStart, top), Level: level(limit, top)}, out
}
