// Package billing is the money side of a request (SPEC 9): a user's billing record — a monthly
// points bucket with a renewal day, and an optional usage-by-model dollar budget — and the
// reservation that makes "never spend more than you have" exact under concurrency: before the
// first attempt the chain's most expensive cost is reserved atomically, after the request the
// served model's real cost replaces it (Settle), and a chain that served nothing gives it back
// (Close with a zero Bill). Only the model that served is billed; failed attempts cost nothing.
//
// Money is kept in integer micro-dollars: catalog prices are USD per million tokens, which is
// exactly micro-dollars per token, and integers add atomically in DynamoDB without rounding drift.
package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
)

// User is a user's billing record. Points and spend belong to the period starting at
// PeriodStart; the first operation after the next renewal starts a new period at zero.
type User struct {
	ID string `json:"id"`
	// MonthlyPoints is the points allowance per period; NoQuota: points are counted, never limited.
	MonthlyPoints int64     `json:"monthlyPoints"`
	RenewalDay    int       `json:"renewalDay"` // day of the month (UTC) a period starts, 1–28
	PeriodStart   time.Time `json:"periodStart"`
	PointsUsed    int64     `json:"pointsUsed"` // includes reservations of requests in flight
	// UsageByModel enables dollar billing: for keys in usage-by-model mode, and as the fallback of
	// user-completions keys whose points are exhausted.
	UsageByModel      bool      `json:"usageByModel"`
	DollarLimitMicros int64     `json:"dollarLimitMicros"` // the budget per period
	SpendMicros       int64     `json:"spendMicros"`       // includes reservations in flight
	CreatedAt         time.Time `json:"createdAt"`
	// BudgetThresholds are the percentages of the period's points allowance and dollar budget
	// whose first crossing is announced (billing:budget_threshold); nil: DefaultThresholds, empty:
	// none.
	BudgetThresholds []int `json:"budgetThresholds"`
	// PointsAlerted and BudgetAlerted are the highest thresholds of the points allowance and of
	// the dollar budget already announced, as Mark gives them ("" none, and one of an earlier
	// period counts as none). A settlement's Claim sets them, under its store's lock or condition.
	PointsAlerted string `json:"pointsAlerted,omitempty"`
	BudgetAlerted string `json:"budgetAlerted,omitempty"`
	// Holds are the reservations of requests in flight, by id, each until its expiry. Stores
	// replace the map on every change (never edit it in place), so a copy of a record stays as
	// it was.
	Holds map[string]Hold `json:"holds,omitempty"`
}

// Hold is a reservation on its user's record: what it holds, in which period, and until when.
// A request's settlement removes it with its charge; one still there after Expires (its request
// died with its process, or never settled) is refunded by RefundExpired. Both remove it under
// the store's lock or condition, so a reservation is either settled or refunded, exactly once.
type Hold struct {
	Period  time.Time `json:"period"`
	Points  int64     `json:"points,omitempty"`
	Micros  int64     `json:"micros,omitempty"`
	Expires time.Time `json:"expires"`
}

// Store keeps users' billing records. Implemented by boltstore.Store and dynamostore.Store;
// internal/testkit/storetest.RunUsers is the contract.
type Store interface {
	// User returns the record, ErrNotFound for an unknown id.
	User(ctx context.Context, id string) (*User, error)
	// CreateUser stores a new record; ErrExists if the id is taken.
	CreateUser(ctx context.Context, u *User) error
	// UpdateUser applies update to the stored record atomically (update may run more than once
	// and may not change the ID) and returns the result; an error from update writes nothing.
	UpdateUser(ctx context.Context, id string, update func(*User) error) (*User, error)
	// Charge adds c's points and micro-dollars (either may be negative) to the record in one
	// atomic step. It fails with ErrStalePeriod, writing nothing, if the record's period is not
	// c.Period, and with ErrInsufficient if c.Capped and a positive amount would pass its cap.
	Charge(ctx context.Context, id string, c Charge) error
}

// Lister is a Store that can list every user (GET /admin/users): both stores are.
type Lister interface {
	// ListUsers returns every user, ordered by id.
	ListUsers(ctx context.Context) ([]*User, error)
}

// Charge is one atomic change of a user's points used and spend.
type Charge struct {
	Period time.Time
	Points int64
	Micros int64
	// Capped is a reservation's charge, decided on a read of the record: it is refused unless the
	// record still has the settings the decision read — MonthlyPoints = PointsCap, and for
	// Micros > 0 usage-by-model on with DollarLimitMicros = MicrosCap — and each positive amount
	// fits: PointsUsed+Points ≤ PointsCap, SpendMicros+Micros ≤ MicrosCap. So a decision made on
	// a stale record (a cached one, or one an admin edited since) fails safe.
	Capped    bool
	PointsCap int64
	MicrosCap int64
	// Opens records Hold on the record as hold Opens (a reservation's charge: Hold is its period,
	// amounts and expiry). Closes removes hold Closes with this charge (its settlement; Hold then
	// says what it held, so a settlement taken back can restore it); the charge is refused with
	// ErrHoldGone, writing nothing, once the hold is gone (refunded after its expiry).
	Opens, Closes string
	Hold          Hold
	// Claim, on a settlement, announces a budget threshold in the same write: the charge is
	// refused with ErrClaimLost, writing nothing, unless the claim holds (Claim.Holds).
	Claim *Claim
}

var (
	// ErrNotFound is an unknown user.
	ErrNotFound = errors.New("billing: user not found")
	// ErrExists is a create for an id already taken.
	ErrExists = errors.New("billing: user already exists")
	// ErrInsufficient is a capped charge that does not fit.
	ErrInsufficient = errors.New("billing: not enough points or budget left")
	// ErrStalePeriod is a charge for a period the record has left (or not reached yet).
	ErrStalePeriod = errors.New("billing: the user's billing period changed")
	// ErrHoldGone is a charge closing a hold that is no longer on the record: it was refunded.
	ErrHoldGone = errors.New("billing: the reservation's hold was refunded")
	// ErrClaimLost is a charge whose threshold claim does not hold: another settlement announced
	// it first, or the count does not reach it. The charge without the claim may still apply.
	ErrClaimLost = errors.New("billing: the budget threshold claim does not hold")
)

// Apply checks c against u and applies it — amounts, and the hold it opens or closes — as a
// store does under its lock: ErrStalePeriod, ErrHoldGone or ErrInsufficient, changing nothing,
// when c does not apply.
func (c Charge) Apply(u *User) error {
	if !u.PeriodStart.Equal(c.Period) {
		return ErrStalePeriod
	}
	if _, ok := u.Holds[c.Closes]; c.Closes != "" && !ok {
		return ErrHoldGone
	}
	if !c.Fits(u) {
		return ErrInsufficient
	}
	if c.Claim != nil && !c.Claim.Holds(u, c) {
		return ErrClaimLost
	}
	u.PointsUsed += c.Points
	u.SpendMicros += c.Micros
	if c.Opens != "" || c.Closes != "" {
		u.Holds = c.holds(u.Holds)
	}
	if c.Claim != nil {
		*u.Alerted(c.Claim.Dollars) = c.Claim.Mark
	}
	return nil
}

// holds returns the holds after c: a new map (a user's record is copied by value, so its holds
// are never changed in place), or nil when none are left — a user's one request in flight opens
// and closes its hold without building a map to close it.
func (c Charge) holds(was map[string]Hold) map[string]Hold {
	n := len(was)
	if _, ok := was[c.Closes]; ok {
		n--
	}
	if c.Opens != "" {
		n++
	}
	if n == 0 {
		return nil
	}
	holds := make(map[string]Hold, n)
	for id, h := range was {
		if id != c.Closes {
			holds[id] = h
		}
	}
	if c.Opens != "" {
		holds[c.Opens] = c.Hold
	}
	return holds
}

// RefundExpired gives back every hold of u that expired before now (one of an earlier period is
// only dropped: that period's counts are gone) and reports how many it removed.
func (u *User) RefundExpired(now time.Time) int {
	n := 0
	for id, h := range u.Holds {
		if !h.Expires.Before(now) {
			continue
		}
		if n == 0 {
			u.Holds = maps.Clone(u.Holds)
		}
		if h.Period.Equal(u.PeriodStart) {
			u.PointsUsed -= h.Points
			u.SpendMicros -= h.Micros
		}
		delete(u.Holds, id)
		n++
	}
	if len(u.Holds) == 0 {
		u.Holds = nil
	}
	return n
}

// Fits reports whether a capped charge c fits u (stores use it under their lock or condition). A
// PointsCap of NoQuota holds any points, while the record still has no quota.
func (c Charge) Fits(u *User) bool {
	if !c.Capped {
		return true
	}
	return u.MonthlyPoints == c.PointsCap && (c.Points <= 0 || c.PointsCap == NoQuota || u.PointsUsed+c.Points <= c.PointsCap) &&
		(c.Micros <= 0 || u.UsageByModel && u.DollarLimitMicros == c.MicrosCap && u.SpendMicros+c.Micros <= c.MicrosCap)
}

// PeriodStart is the start of the period containing now for a renewal day (UTC midnight).
func PeriodStart(renewalDay int, now time.Time) time.Time {
	now = now.UTC()
	start := time.Date(now.Year(), now.Month(), renewalDay, 0, 0, 0, 0, time.UTC)
	if start.After(now) {
		start = start.AddDate(0, -1, 0)
	}
	return start
}

// NextRenewal is when the current period of u ends.
func (u *User) NextRenewal() time.Time { return u.PeriodStart.AddDate(0, 1, 0) }

// NoQuota is the MonthlyPoints of a user whose points are counted but never limited: the
// bootstrap admin's user, as its key has no request limits; an admin sets it with
// "monthlyPoints": null.
const NoQuota int64 = -1

// HasQuota reports whether u's points are limited.
func (u *User) HasQuota() bool { return u.MonthlyPoints != NoQuota }

// Quota is u's allowance and what is left of it (never negative), or nil, nil when u has no quota:
// what the API shows, null for no limit.
func (u *User) Quota() (allowance, remaining *int64) {
	if !u.HasQuota() {
		return nil, nil
	}
	left := u.PointsRemaining()
	return &u.MonthlyPoints, &left
}

// PointsRemaining is what is left of the allowance (never negative); math.MaxInt64 without a quota.
func (u *User) PointsRemaining() int64 {
	if !u.HasQuota() {
		return math.MaxInt64
	}
	return max(0, u.MonthlyPoints-u.PointsUsed)
}

// BudgetRemainingMicros is what is left of the dollar budget (never negative).
func (u *User) BudgetRemainingMicros() int64 { return max(0, u.DollarLimitMicros-u.SpendMicros) }

// rollover starts the period containing now if u is still in an earlier one.
func (u *User) rollover(now time.Time) bool {
	p := PeriodStart(u.RenewalDay, now)
	if !u.PeriodStart.Before(p) {
		return false
	}
	u.PeriodStart, u.PointsUsed, u.SpendMicros, u.Holds = p, 0, 0, nil // the old period's holds went with it
	return true
}

// Defaults are a new user's settings, for users created implicitly (a key naming an unknown
// user, a key's first billed request).
type Defaults struct {
	MonthlyPoints     int64
	UsageByModel      bool
	DollarLimitMicros int64
}

// DefaultUser is the project's default: 1000 points a month, no dollar billing.
var DefaultUser = Defaults{MonthlyPoints: 1000}

// NewUser returns a user with defaults d, renewing on the day of the month of now (the 28th for
// later days, so every month has it).
func NewUser(id string, d Defaults, now time.Time) *User {
	now = now.UTC()
	day := min(now.Day(), 28)
	return &User{ID: id, MonthlyPoints: d.MonthlyPoints, RenewalDay: day, PeriodStart: PeriodStart(day, now),
		UsageByModel: d.UsageByModel, DollarLimitMicros: d.DollarLimitMicros, CreatedAt: now}
}

// Micros converts dollars to micro-dollars, rounding to the nearest.
func Micros(dollars float64) int64 { return int64(math.Round(dollars * 1e6)) }

// Dollars converts micro-dollars to dollars.
func Dollars(micros int64) float64 { return float64(micros) / 1e6 }

// UserPatch is an admin's change to a user (PUT or PATCH /admin/users/{id}); nil (or unset)
// fields are left as they are. A null monthlyPoints lifts the quota (NoQuota).
type UserPatch struct {
	MonthlyPoints OptInt64           `json:"monthlyPoints"`
	RenewalDay    *int               `json:"renewalDay"`
	UsageByModel  *UsageByModelPatch `json:"usageByModel"`
	// BudgetThresholds replaces the user's thresholds: percentages from 1 to 100, at most
	// MaxThresholds of them; empty: none.
	BudgetThresholds *[]int `json:"budgetThresholds"`
}

// OptInt64 is a number of a patch that may also be null: absent (Set false), null (Null), or V.
type OptInt64 struct {
	Set, Null bool
	V         int64
}

// SomeInt64 is a set number, for callers building a patch in code (cmd/admin).
func SomeInt64(v int64) OptInt64 { return OptInt64{Set: true, V: v} }

// UnmarshalJSON implements json.Unmarshaler.
func (o *OptInt64) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(bytes.TrimSpace(b)) == "null" {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.V)
}

// UsageByModelPatch is the usage-by-model part of a UserPatch.
type UsageByModelPatch struct {
	Enabled     *bool    `json:"enabled"`
	DollarLimit *float64 `json:"dollarLimit"`
}

// MaxDollarLimit bounds a budget so micro-dollars stay far inside int64.
const MaxDollarLimit = 1e9

// Apply validates p and applies it to u. A changed renewal day starts the period containing now
// on the new day, keeping what was used.
func (p UserPatch) Apply(u *User, now time.Time) error {
	if mp := p.MonthlyPoints; mp.Set && !mp.Null && mp.V < 0 {
		return fault.Invalid("monthlyPoints", "monthlyPoints must be 0 or more, or null for no quota")
	}
	if p.RenewalDay != nil && (*p.RenewalDay < 1 || *p.RenewalDay > 28) {
		return fault.Invalid("renewalDay", fmt.Sprintf("renewalDay must be a day of the month from 1 to 28 (got %d)", *p.RenewalDay))
	}
	var ubm UsageByModelPatch
	if p.UsageByModel != nil {
		ubm = *p.UsageByModel
	}
	if d := ubm.DollarLimit; d != nil && !(*d >= 0 && *d <= MaxDollarLimit) {
		return fault.Invalid("usageByModel.dollarLimit", fmt.Sprintf("usageByModel.dollarLimit must be from 0 to %.0f dollars", MaxDollarLimit))
	}
	var thresholds []int
	if p.BudgetThresholds != nil {
		var err error
		if thresholds, err = NormalizeThresholds(*p.BudgetThresholds); err != nil {
			return err
		}
	}
	switch mp := p.MonthlyPoints; {
	case mp.Null:
		u.MonthlyPoints = NoQuota
	case mp.Set:
		u.MonthlyPoints = mp.V
	}
	if p.BudgetThresholds != nil {
		u.BudgetThresholds = thresholds
	}
	if p.RenewalDay != nil && *p.RenewalDay != u.RenewalDay {
		u.RenewalDay = *p.RenewalDay
		u.PeriodStart = PeriodStart(u.RenewalDay, now)
	}
	if ubm.Enabled != nil {
		u.UsageByModel = *ubm.Enabled
	}
	if ubm.DollarLimit != nil {
		u.DollarLimitMicros = Micros(*ubm.DollarLimit)
	}
	return nil
}
