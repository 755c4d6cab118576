package billing

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/fault"
)

// Biller reserves, settles and releases requests' costs in a Store.
type Biller struct {
	Store Store
	// Defaults are the settings of users created on first use; the zero value means DefaultUser.
	Defaults *Defaults
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Estimate is what is known of a request before it runs, to price a usage-by-model reservation.
type Estimate struct {
	// InputTokens is the prompt's size in tokens; EstimateTokens gives one from its bytes.
	InputTokens int
	// MaxOutputTokens is the request's max_tokens; 0 means DefaultMaxOutputTokens.
	MaxOutputTokens int
}

// DefaultMaxOutputTokens prices the output of a request that sets no max_tokens: the classic
// endpoint's cap. A request that produces more is still settled at its real usage.
const DefaultMaxOutputTokens = 4000

// EstimateTokens is a conservative token count for n bytes of text (about four bytes a token in
// English; rounding up so an estimate errs on the side of reserving enough).
func EstimateTokens(n int) int { return (n + 3) / 4 }

// Usage is what a served request consumed.
type Usage struct {
	InputTokens  int
	OutputTokens int
}

// Points is what a completion of m costs a user-completions key; a model the catalog gives no
// points costs one, so no model is free by omission.
func Points(m *catalog.Model) int64 { return max(1, int64(m.Points)) }

// CostMicros is m's price for u in micro-dollars, rounded up: catalog prices are USD per million
// tokens, i.e. micro-dollars per token.
func CostMicros(m *catalog.Model, u Usage) int64 {
	return int64(math.Ceil(float64(u.InputTokens)*m.Pricing.InputPer1M + float64(u.OutputTokens)*m.Pricing.OutputPer1M))
}

// usage is what a reservation prices: the prompt plus max_tokens of output.
func (e Estimate) usage() Usage {
	out := e.MaxOutputTokens
	if out <= 0 {
		out = DefaultMaxOutputTokens
	}
	return Usage{InputTokens: e.InputTokens, OutputTokens: out}
}

// UserID is whom a key bills: its user, or for a key without one (a bootstrap admin key made
// before users existed) a user named after the key.
func UserID(k *apikey.Key) string {
	if k.UserID != "" {
		return k.UserID
	}
	return "key:" + k.ID
}

func (b *Biller) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

func (b *Biller) defaults() Defaults {
	if b.Defaults != nil {
		return *b.Defaults
	}
	return DefaultUser
}

// EnsureUser returns the user's record in its current period, creating it with the defaults if
// unknown and starting a new period if the renewal day has passed.
func (b *Biller) EnsureUser(ctx context.Context, id string) (*User, error) {
	now := b.now()
	u, err := b.Store.User(ctx, id)
	if errors.Is(err, ErrNotFound) {
		u = NewUser(id, b.defaults(), now)
		if err = b.Store.CreateUser(ctx, u); errors.Is(err, ErrExists) {
			u, err = b.Store.User(ctx, id) // created concurrently: use theirs
		}
	}
	if err != nil {
		return nil, err
	}
	if b.Current(u) {
		return u, nil
	}
	return b.Store.UpdateUser(ctx, id, func(u *User) error { u.rollover(now); return nil })
}

// Current reports whether u is in its current period by the biller's clock: no renewal day has
// passed since it was read.
func (b *Biller) Current(u *User) bool {
	return !u.PeriodStart.Before(PeriodStart(u.RenewalDay, b.now()))
}

// Reservation is the cost held for one request between Reserve and Settle or Close. Exactly
// one of Settle and Close takes effect, once; later calls return ErrClosed.
type Reservation struct {
	// UserID is the billed user.
	UserID string
	// Mode is what the request is paid with: the key's mode, or usage-by-model on a fallback.
	Mode apikey.BillingMode
	// BillingFallback is true when a user-completions key is paying by usage-by-model because its
	// points are exhausted (metadata.billing_fallback / secureai.billing_fallback).
	BillingFallback bool
	// Points and Micros are what is held (one of them is zero).
	Points, Micros int64
	// HoldID names the hold the reservation's charge opened on the user's record (Charge.Opens),
	// "" for none, and Hold is that hold; Close closes it.
	HoldID string
	Hold   Hold

	biller   *Biller
	period   time.Time
	estimate Estimate
	mu       sync.Mutex
	closed   bool
}

// ErrClosed is a second Settle or Close of a reservation (a zero Bill releases it).
var ErrClosed = errors.New("billing: reservation already settled or released")

// Reserve holds the most expensive cost of chain for the key's user, atomically, before the
// first attempt. It refuses with a *fault.Error of kind QuotaExceeded when the user cannot pay:
// "Completion limit exceeded" (points, with no usage-by-model to fall back on), "Usage by Model
// budget exceeded", or "Usage by Model required" (a usage-by-model key whose user has it off).
// A user-completions key whose points are exhausted falls back to usage-by-model when its user
// has it enabled and the budget holds the chain's most expensive dollar estimate.
func (b *Biller) Reserve(ctx context.Context, key *apikey.Key, chain []*catalog.Model, est Estimate) (*Reservation, error) {
	id := UserID(key)
	for range 3 {
		u, err := b.EnsureUser(ctx, id)
		if err != nil {
			return nil, Unavailable(err)
		}
		r, err := b.Hold(key, u, chain, est, func(c Charge) error { return b.Store.Charge(ctx, u.ID, c) })
		if errors.Is(err, ErrStalePeriod) {
			continue // renewed between the read and the charge: price it in the new period
		}
		return r, err
	}
	return nil, Unavailable(fmt.Errorf("billing: user %s: %w", id, ErrStalePeriod))
}

// Hold is Reserve's rule over u, the user's record as last read (in its current period): it
// decides which bucket pays for chain and holds the amount through charge — a capped Charge
// carrying the settings it was decided on, so a charge against a record that has changed since
// is refused. Its errors are Reserve's refusals, ErrStalePeriod when charge reports it, and a
// *fault.Error from charge as it is (internal/ledger refuses a request over its limits there).
func (b *Biller) Hold(key *apikey.Key, u *User, chain []*catalog.Model, est Estimate, charge func(Charge) error) (*Reservation, error) {
	if len(chain) == 0 {
		return nil, errors.New("billing: a reservation needs the chain's models")
	}
	points, micros := dearest(chain, est)
	r := &Reservation{UserID: u.ID, Mode: key.BillingModeOrDefault(), biller: b, period: u.PeriodStart, estimate: est}
	if err := decide(u, r, points, micros, charge); err != nil {
		return nil, err
	}
	return r, nil
}

// dearest is the chain's highest points and highest dollar estimate.
func dearest(chain []*catalog.Model, est Estimate) (points, micros int64) {
	for _, m := range chain {
		points = max(points, Points(m))
		micros = max(micros, CostMicros(m, est.usage()))
	}
	return points, micros
}

// decide is the billing rule for one request: which bucket pays, or which refusal. charge holds
// the amount (the store's atomic capped charge for Reserve, a check of u for Quote).
func decide(u *User, r *Reservation, points, micros int64, charge func(Charge) error) error {
	dollars := func() error {
		err := charge(Charge{Period: r.period, Micros: micros, Capped: true, PointsCap: u.MonthlyPoints, MicrosCap: u.DollarLimitMicros})
		if err == nil {
			r.Mode, r.Micros = apikey.UsageByModel, micros
		}
		return err
	}
	if r.Mode == apikey.UsageByModel {
		if !u.UsageByModel {
			return fault.New(fault.QuotaExceeded, "Usage by Model required",
				fmt.Sprintf("This API key bills usage by model, but usage-by-model billing is not enabled for user %s; an admin can enable it under /admin/users/%s", u.ID, u.ID)).
				WithCode("usage_by_model_required")
		}
		err := dollars()
		if errors.Is(err, ErrInsufficient) {
			return budgetExceeded(u, micros)
		}
		return storeErr(err)
	}
	err := charge(Charge{Period: r.period, Points: points, Capped: true, PointsCap: u.MonthlyPoints})
	if err == nil {
		r.Points = points
		return nil
	}
	if !errors.Is(err, ErrInsufficient) {
		return storeErr(err)
	}
	if u.UsageByModel {
		err := dollars()
		if err == nil {
			r.BillingFallback = true
			return nil
		}
		if !errors.Is(err, ErrInsufficient) {
			return storeErr(err)
		}
	}
	msg := fmt.Sprintf("This request needs up to %d points and %d of the %d monthly points remain; they renew at %s",
		points, u.PointsRemaining(), u.MonthlyPoints, u.NextRenewal().Format(time.RFC3339))
	if u.UsageByModel {
		msg += fmt.Sprintf(", and the usage-by-model budget cannot cover it either ($%.6f of $%.2f left)",
			Dollars(u.BudgetRemainingMicros()), Dollars(u.DollarLimitMicros))
	}
	return fault.New(fault.QuotaExceeded, "Completion limit exceeded", msg).WithCode("points_exhausted")
}

func budgetExceeded(u *User, micros int64) error {
	return fault.New(fault.QuotaExceeded, "Usage by Model budget exceeded",
		fmt.Sprintf("This request may cost up to $%.6f and $%.6f of the $%.2f usage-by-model budget remains; it renews at %s",
			Dollars(micros), Dollars(u.BudgetRemainingMicros()), Dollars(u.DollarLimitMicros), u.NextRenewal().Format(time.RFC3339))).
		WithCode("budget_exceeded")
}

// storeErr passes ErrStalePeriod through for Reserve's retry, and a refusal the charge made
// itself (a *fault.Error), and turns other store failures into Unavailable.
func storeErr(err error) error {
	var fe *fault.Error
	if err == nil || errors.Is(err, ErrStalePeriod) || errors.As(err, &fe) {
		return err
	}
	return Unavailable(err)
}

// Unavailable is the refusal of a request whose billing store failed (err).
func Unavailable(err error) error {
	return fault.Dependency("the billing store", "The billing store cannot be reached; try again", err)
}

// Quote is what a request would reserve, for a dry run (POST /policy-check's quota check).
type Quote struct {
	// PointsRequired and MicrosRequired are the chain's most expensive costs.
	PointsRequired, MicrosRequired int64
	// User is the billed user's record as the request would find it (not stored if new).
	User *User
	// Mode and BillingFallback are how the request would pay.
	Mode            apikey.BillingMode
	BillingFallback bool
}

// Quote answers whether the key could pay for chain now, writing nothing: the same rule and
// refusal as Reserve, without holding anything (so a later Reserve may still be refused).
func (b *Biller) Quote(ctx context.Context, key *apikey.Key, chain []*catalog.Model, est Estimate) (Quote, error) {
	if len(chain) == 0 {
		return Quote{}, errors.New("billing: Quote needs the chain's models")
	}
	now := b.now()
	id := UserID(key)
	u, err := b.Store.User(ctx, id)
	if errors.Is(err, ErrNotFound) {
		u, err = NewUser(id, b.defaults(), now), nil
	}
	if err != nil {
		return Quote{}, Unavailable(err)
	}
	u.rollover(now)
	q := Quote{User: u}
	q.PointsRequired, q.MicrosRequired = dearest(chain, est)
	r := &Reservation{Mode: key.BillingModeOrDefault(), period: u.PeriodStart}
	err = decide(u, r, q.PointsRequired, q.MicrosRequired, func(c Charge) error {
		if !c.Fits(u) {
			return ErrInsufficient
		}
		return nil
	})
	q.Mode, q.BillingFallback = r.Mode, r.BillingFallback
	return q, err
}

// Bill is what a settled request cost, for the request's record and events.
type Bill struct {
	UserID          string
	Mode            apikey.BillingMode
	BillingFallback bool
	Model           string
	Points          int64
	Micros          int64
	// Estimated is true when the request ended without usage (a stream cut before its usage
	// chunk) and was billed from the reservation's estimate: the prompt's estimated tokens plus
	// max_tokens of output.
	Estimated bool
}

// Settle replaces the reservation with the served model's real cost (Bill) in the store. Call it
// once, after a request served; failed attempts are not billed, and an idempotent replay never
// reserves.
func (r *Reservation) Settle(ctx context.Context, served *catalog.Model, usage *Usage) (Bill, error) {
	bill := r.Bill(served, usage)
	return bill, r.Close(ctx, bill, r.biller.Store.Charge)
}

// Bill is what the request costs when served by served: its catalog points, or its price × usage
// (usage nil: the estimate, and Bill.Estimated).
func (r *Reservation) Bill(served *catalog.Model, usage *Usage) Bill {
	bill := Bill{UserID: r.UserID, Mode: r.Mode, BillingFallback: r.BillingFallback, Model: served.Name}
	if r.Mode == apikey.UsageByModel {
		u := r.estimate.usage()
		if usage != nil {
			u = *usage
		} else {
			bill.Estimated = true
		}
		bill.Micros = CostMicros(served, u)
	} else {
		bill.Points = Points(served)
	}
	return bill
}

// SettleCancelled bills an attempt cancelled before it produced anything for the caller (a hedge
// that lost its race, SPEC 3.5a): by usage, the prompt it was sent (its estimated tokens, since the
// provider reports none for a closed connection) at m's input price and no output; in points,
// nothing, since points count answers and it gave none. The rest of the hold is released.
func (r *Reservation) SettleCancelled(ctx context.Context, m *catalog.Model) (Bill, error) {
	bill := Bill{UserID: r.UserID, Mode: r.Mode, BillingFallback: r.BillingFallback, Model: m.Name, Estimated: true}
	if r.Mode == apikey.UsageByModel {
		bill.Micros = CostMicros(m, Usage{InputTokens: r.estimate.InputTokens})
	}
	return bill, r.Close(ctx, bill, r.biller.Store.Charge)
}

// Release gives back everything the reservation holds.
func (r *Reservation) Release(ctx context.Context) error {
	return r.Close(ctx, Bill{}, r.biller.Store.Charge)
}

// Close turns what the reservation holds into bill's points and micros (a zero Bill releases it),
// once, through charge: the Store's Charge, or a write that stores more with it in one atomic
// step (internal/ledger stores the receipt so). If the period renewed while the request ran — the
// reservation went with the old period's counts — the cost is charged to the new period.
func (r *Reservation) Close(ctx context.Context, bill Bill, charge func(ctx context.Context, userID string, c Charge) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	err := charge(ctx, r.UserID, Charge{Period: r.period, Points: bill.Points - r.Points, Micros: bill.Micros - r.Micros, Closes: r.HoldID, Hold: r.Hold})
	if errors.Is(err, ErrHoldGone) {
		// Refunded after its expiry while the request still ran: bill it afresh, once.
		err = charge(ctx, r.UserID, Charge{Period: r.period, Points: bill.Points, Micros: bill.Micros})
	}
	if errors.Is(err, ErrStalePeriod) {
		var u *User
		if u, err = r.biller.EnsureUser(ctx, r.UserID); err == nil {
			err = charge(ctx, r.UserID, Charge{Period: u.PeriodStart, Points: bill.Points, Micros: bill.Micros})
		}
	}
	if err != nil {
		return fmt.Errorf("billing: settling for user %s: %w", r.UserID, err)
	}
	r.closed = true
	return nil
}
