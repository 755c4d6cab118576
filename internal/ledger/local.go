package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/receipt"
)

// Local is the Store of the single local process: its in-memory request counter, and the
// embedded store's users and receipts (each may be nil where nothing uses it).
type Local struct {
	Counter  *limits.Memory
	Users    billing.Store
	Receipts receipt.Store
}

// Admit implements Store: the charge runs under the counter's lock once every window has room
// (limits.Memory.TakeRequestWith), so the request is counted only if it is charged, and a
// concurrent request never sees a count that is then taken back.
func (s Local) Admit(ctx context.Context, keyID string, ws []limits.Window, userID string, c *billing.Charge) (int, error) {
	var charge func() error
	if c != nil {
		charge = func() error { return s.Users.Charge(ctx, userID, *c) }
	}
	return s.Counter.TakeRequestWith(ctx, keyID, ws, charge)
}

// Settle implements Store: the charge, then the receipt; a receipt that cannot be stored takes
// the charge back, so both stand or neither does (a crash between the two loses the receipt of
// a request that was billed, which the embedded store's single process makes the only gap).
func (s Local) Settle(ctx context.Context, userID string, c *billing.Charge, rec *receipt.Record) error {
	if c != nil {
		if err := s.Users.Charge(ctx, userID, *c); err != nil {
			return err
		}
	}
	if rec == nil {
		return nil
	}
	err := s.Receipts.PutReceipt(ctx, *rec)
	if err != nil && c != nil {
		// Taken back whole: the amounts, and the hold the settlement closed.
		err = errors.Join(err, s.Users.Charge(ctx, userID, billing.Charge{Period: c.Period, Points: -c.Points, Micros: -c.Micros, Opens: c.Closes, Hold: c.Hold}))
		if cl := c.Claim; cl != nil {
			// And the threshold it claimed, so the next settlement reaching it announces it.
			_, uerr := s.Users.UpdateUser(ctx, userID, func(u *billing.User) error {
				if m := u.Alerted(cl.Dollars); *m == cl.Mark {
					*m = cl.Was
				}
				return nil
			})
			err = errors.Join(err, uerr)
		}
	}
	return err
}

// Refunder is a billing store that sweeps expired reservation holds (boltstore.Store).
type Refunder interface {
	RefundExpired(ctx context.Context, now time.Time) (int, error)
}

// RefundExpired implements Store through Users, when it sweeps holds (nothing to refund when
// nothing is billed).
func (s Local) RefundExpired(ctx context.Context, now time.Time) (int, error) {
	r, ok := s.Users.(Refunder)
	if !ok {
		return 0, nil
	}
	return r.RefundExpired(ctx, now)
}
