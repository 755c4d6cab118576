// Package ledger keeps a completion's books with the stores, in one atomic write each way.
// Before the first attempt, Admit counts the request in every window of its key (internal/limits)
// and holds the chain's dearest cost for its user (internal/billing) — both, or neither: a request
// refused for its quota is counted in no window, and one refused by a full window holds nothing.
// A hedge started beside the running attempt holds its own cost the same way (Reserve), counted in
// no window. The continuation of a resumed stream is billed once it has ended, through Reserve and
// Settle at once: it holds nothing while it runs.
// After the answer, Settle replaces the reservation with the served model's cost and stores the
// request's signed receipt (internal/receipt), again together.
//
// In the cloud each is one DynamoDB TransactWriteItems (internal/store/dynamostore), so a warm request
// makes one store round trip before its first attempt and one after it. The reservation's
// condition needs the user's caps and period: Admit takes them from a short-lived cache of each
// user's record, and the condition also checks that the record still has the settings the
// decision was made on. A stale cache therefore fails safe: the write is refused, the record is
// read again and the request decided again, once. Locally, Local does the same over the
// in-memory request counter and the embedded store.
package ledger

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/receipt"
)

// Store writes a request's books atomically: dynamostore.Store (one transaction each) and Local.
// internal/testkit/storetest.RunLedger is the contract.
type Store interface {
	// Admit counts one request for keyID in every window of ws and applies c (nil: no charge) to
	// user userID, both or neither. A full window returns its index in ws, nothing written;
	// otherwise -1 with c's refusal as billing.Store.Charge gives it (billing.ErrInsufficient,
	// ErrStalePeriod, ErrNotFound) or the store's failure.
	Admit(ctx context.Context, keyID string, ws []limits.Window, userID string, c *billing.Charge) (full int, err error)
	// Settle applies c (nil: no charge) to user userID and stores rec (nil: no receipt), both or
	// neither. Errors: c's as billing.Store.Charge gives them, receipt.ErrExists.
	Settle(ctx context.Context, userID string, c *billing.Charge, rec *receipt.Record) error
	// RefundExpired refunds every reservation hold that expired before now and reports how many
	// it removed. A hold is removed by its settlement or by this, under one lock or condition, so
	// a reservation is settled or refunded, exactly once, whatever runs concurrently.
	RefundExpired(ctx context.Context, now time.Time) (int, error)
}

// DefaultHoldMargin is how long past its request's deadline a reservation stays held before a
// sweep may refund it: room for a settlement under way when the deadline struck.
const DefaultHoldMargin = 2 * time.Minute

// DefaultHoldTTL is a reservation's life when its request's context has no deadline.
const DefaultHoldTTL = 15 * time.Minute

// RefundEvery is how often the local server sweeps expired holds (also once at start).
const RefundEvery = time.Minute

// holdExpiry is when a reservation made at now under ctx may be refunded: its deadline (or
// DefaultHoldTTL from now) plus the ledger's hold margin.
func (l *Ledger) holdExpiry(ctx context.Context, now time.Time) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		d = now.Add(DefaultHoldTTL)
	}
	return d.Add(cmp.Or(l.HoldMargin, DefaultHoldMargin)).UTC()
}

func newHoldID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// DefaultUserTTL is how long Admit trusts a user's settings it read. A change an admin makes
// meanwhile costs one refused write and a read, never a wrong decision.
const DefaultUserTTL = 30 * time.Second

// maxCachedUsers bounds the user cache.
const maxCachedUsers = 4096

// Ledger admits and settles requests through a Store. Build it once per process, so its user
// cache serves every request.
type Ledger struct {
	Store Store
	// Limits counts requests in their key's windows; false: the deployment keeps no request
	// limits.
	Limits bool
	// Biller holds and settles what requests cost (its rule, its clock, new users' defaults); nil:
	// nothing is billed.
	Biller *billing.Biller
	// UserTTL is how long a user's record read from the store is trusted for its settings;
	// 0: DefaultUserTTL.
	UserTTL time.Duration
	// HoldMargin is how long past its request's deadline a reservation stays held before
	// RefundExpired gives it back; 0: DefaultHoldMargin.
	HoldMargin time.Duration
	// Crossed hears each budget threshold a settlement announced (billing:budget_threshold), after
	// its write; nil: thresholds are not claimed.
	Crossed func(ctx context.Context, c billing.Crossing)

	mu       sync.Mutex
	users    map[string]cachedUser
	inflight map[string]chan struct{} // reads started by Prefetch, closed when done
}

type cachedUser struct {
	user billing.User
	read time.Time
}

// Admit counts the request in every window of key at now and holds what the chain's dearest
// model would cost, in one atomic store write, or does neither. A full window refuses it as
// limits.Refuse does (checked first: a request over its limits is refused as such whatever its
// quota), a quota as billing.Biller.Hold does; the reservation is nil when nothing is billed.
func (l *Ledger) Admit(ctx context.Context, key *apikey.Key, chain []*catalog.Model, est billing.Estimate, now time.Time) (*billing.Reservation, error) {
	var ws []limits.Window
	if l.Limits {
		ws = limits.Windows(key, now)
	}
	if l.Biller == nil {
		full, err := l.Store.Admit(ctx, key.ID, ws, "", nil)
		return nil, limits.Refuse(ws, full, err, now)
	}
	return l.hold(ctx, key, ws, chain, est, now)
}

// Reserve holds what chain's dearest model would cost for a request Admit already admitted — a
// hedge started beside its running attempt; the ended continuation of a resumed stream, settled at
// once — as a hold of its own on the user's record, refunded once its deadline has passed if it
// never settles, as Admit's is; the request is counted in no window again. It refuses a quota as Admit does; the
// reservation is nil when nothing is billed.
func (l *Ledger) Reserve(ctx context.Context, key *apikey.Key, chain []*catalog.Model, est billing.Estimate, now time.Time) (*billing.Reservation, error) {
	if l.Biller == nil {
		return nil, nil
	}
	return l.hold(ctx, key, nil, chain, est, now)
}

// hold holds chain's dearest cost for key's user as a hold on the user's record, counting the
// request in the windows ws in the same store write (none: counted nowhere).
func (l *Ledger) hold(ctx context.Context, key *apikey.Key, ws []limits.Window, chain []*catalog.Model, est billing.Estimate, now time.Time) (*billing.Reservation, error) {
	id := billing.UserID(key)
	// The reservation is a hold on the user's record until it settles, so a request that never
	// settles (its process died) is refunded once its deadline has passed (RefundExpired).
	hold, expires := newHoldID(), l.holdExpiry(ctx, now)
	var held billing.Hold
	charge := func(c billing.Charge) error {
		held = billing.Hold{Period: c.Period, Points: c.Points, Micros: c.Micros, Expires: expires}
		c.Opens, c.Hold = hold, held
		full, err := l.Store.Admit(ctx, key.ID, ws, id, &c)
		if err != nil {
			return err
		}
		if err := limits.Refuse(ws, full, nil, now); err != nil {
			return err
		}
		l.note(id, c)
		return nil
	}
	for attempt := range 3 {
		u, cached, err := l.user(ctx, id, attempt == 0)
		if err != nil {
			return nil, billing.Unavailable(err)
		}
		r, err := l.Biller.Hold(key, u, chain, est, charge)
		switch {
		case err == nil:
			r.HoldID, r.Hold = hold, held
			return r, nil
		case errors.Is(err, billing.ErrStalePeriod), cached && (fault.KindOf(err) == fault.QuotaExceeded || errors.Is(err, billing.ErrNotFound)):
			// Decided on a record that has changed: decide again on a fresh read.
			l.forget(id)
		default:
			return nil, err
		}
	}
	return nil, billing.Unavailable(billing.ErrStalePeriod)
}

// user is the user's record in its current period: the cached one when cached is allowed and
// it is fresh, else one read (created, renewed) through the Biller and cached.
func (l *Ledger) user(ctx context.Context, id string, cached bool) (*billing.User, bool, error) {
	ttl := l.UserTTL
	if ttl <= 0 {
		ttl = DefaultUserTTL
	}
	if cached {
		l.mu.Lock()
		wait := l.inflight[id]
		l.mu.Unlock()
		if wait != nil { // a prefetch is reading it: its answer is as fresh as a read of our own
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, false, ctx.Err()
			}
		}
		if u, ok := l.fresh(id, ttl); ok {
			return &u, true, nil
		}
	}
	return l.read(ctx, id)
}

// fresh is the cached record of user id when it is younger than ttl and in its current period.
func (l *Ledger) fresh(id string, ttl time.Duration) (billing.User, bool) {
	l.mu.Lock()
	c, ok := l.users[id]
	l.mu.Unlock()
	if ok && time.Since(c.read) < ttl && l.Biller.Current(&c.user) {
		return c.user, true
	}
	return billing.User{}, false
}

// read reads (creates, renews) user id through the Biller and caches the record as read when the
// read began, so a read that took long is not trusted longer.
func (l *Ledger) read(ctx context.Context, id string) (*billing.User, bool, error) {
	began := time.Now()
	u, err := l.Biller.EnsureUser(ctx, id)
	if err != nil {
		return nil, false, err
	}
	crossed := l.catchUp(ctx, u)
	l.remember(u, began)
	for _, c := range crossed {
		l.Crossed(ctx, c)
	}
	return u, false, nil
}

// catchUp claims, on u as just read, a threshold its count reaches that no settlement announced
// (the settlement that reached it decided on a cache that was behind, or the count was reached by
// requests still in flight, the last of them refused): a write of the claim alone, with no
// amount, refused if another process announced it first. It records the marks it set on u and
// returns the crossings to announce; a claim that fails is left to the next read.
func (l *Ledger) catchUp(ctx context.Context, u *billing.User) []billing.Crossing {
	if l.Crossed == nil {
		return nil
	}
	var out []billing.Crossing
	for _, dollars := range []bool{false, true} {
		c := billing.Charge{Period: u.PeriodStart}
		claim, crossed := billing.ClaimFor(u, c, dollars)
		if claim == nil {
			continue
		}
		c.Claim = claim
		if l.Biller.Store.Charge(ctx, u.ID, c) == nil {
			_ = c.Apply(u) // the mark, on the record as read
			out = append(out, crossed...)
		}
	}
	return out
}

// remember caches u as read at began.
func (l *Ledger) remember(u *billing.User, began time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.users == nil || len(l.users) >= maxCachedUsers {
		l.users = make(map[string]cachedUser) // full: start over, each user costs one read again
	}
	l.users[u.ID] = cachedUser{user: *u, read: began}
}

// prefetchTimeout bounds a prefetch's read, which outlives nothing but its request's checks.
const prefetchTimeout = 10 * time.Second

// Prefetch starts reading the user key bills, unless its record is cached and fresh or already
// being read, so that the read runs beside the request's other checks (its circuit breakers)
// instead of after them: a cold function's first request then makes one round trip fewer before
// its first attempt. Admit waits for the read it started. It never blocks.
func (l *Ledger) Prefetch(ctx context.Context, key *apikey.Key) {
	if l.Biller == nil {
		return
	}
	id := billing.UserID(key)
	ttl := l.UserTTL
	if ttl <= 0 {
		ttl = DefaultUserTTL
	}
	if _, ok := l.fresh(id, ttl); ok {
		return
	}
	l.mu.Lock()
	if l.inflight[id] != nil {
		l.mu.Unlock()
		return
	}
	if l.inflight == nil {
		l.inflight = make(map[string]chan struct{})
	}
	done := make(chan struct{})
	l.inflight[id] = done
	l.mu.Unlock()
	go func() {
		defer func() {
			l.mu.Lock()
			delete(l.inflight, id)
			l.mu.Unlock()
			close(done)
		}()
		// The request may be refused before it waits for this read: the read keeps the
		// request's values (its trace) but not its cancellation.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), prefetchTimeout)
		defer cancel()
		_, _, _ = l.read(rctx, id) // a failure leaves nothing cached: Admit reads again and reports it
	}()
}

func (l *Ledger) forget(id string) {
	l.mu.Lock()
	delete(l.users, id)
	l.mu.Unlock()
}

// Settle closes a request's books in one atomic store write: the reservation r (nil: none)
// settled at bill — released when bill is nil — and the served request's signed receipt rec
// (nil: none) stored with it.
func (l *Ledger) Settle(ctx context.Context, r *billing.Reservation, bill *billing.Bill, rec *receipt.Record) error {
	if r == nil {
		if rec == nil {
			return nil
		}
		return l.Store.Settle(ctx, "", nil, rec)
	}
	var b billing.Bill
	if bill != nil {
		b = *bill
	}
	var crossed []billing.Crossing
	err := r.Close(ctx, b, func(ctx context.Context, userID string, c billing.Charge) error {
		var err error
		crossed, err = l.settle(ctx, userID, c, r.Mode == apikey.UsageByModel, rec)
		return err
	})
	if err == nil {
		for _, c := range crossed {
			l.Crossed(ctx, c)
		}
	}
	return err
}

// claimAttempts bounds the settlements that claim a threshold and find it taken or not reached,
// each followed by a read of the record: then the request settles without a claim.
const claimAttempts = 3

// settle writes a settlement's charge c and receipt rec and returns the thresholds it announced.
// When the record as this process knows it (its cache, kept up with its own charges) says c
// reaches a threshold not yet announced, the write carries the claim; a claim that does not hold
// (announced meanwhile, or the cache was behind) costs the write and a fresh read, and the claim
// is decided again on the record read.
func (l *Ledger) settle(ctx context.Context, userID string, c billing.Charge, dollars bool, rec *receipt.Record) ([]billing.Crossing, error) {
	if l.Crossed != nil {
		u, ok := l.cached(userID)
		for attempt := 0; ok && attempt < claimAttempts; attempt++ {
			claim, crossed := billing.ClaimFor(&u, c, dollars)
			if claim == nil {
				break
			}
			cc := c
			cc.Claim = claim
			err := l.Store.Settle(ctx, userID, &cc, rec)
			if err == nil {
				l.note(userID, cc)
				return crossed, nil
			}
			if !errors.Is(err, billing.ErrClaimLost) {
				return nil, err
			}
			fresh, err := l.Biller.Store.User(ctx, userID)
			if err != nil {
				break // settle without a claim: a later settlement announces it
			}
			l.remember(fresh, time.Now())
			u = *fresh
		}
	}
	if err := l.Store.Settle(ctx, userID, &c, rec); err != nil {
		return nil, err
	}
	l.note(userID, c)
	return nil, nil
}

// cached is the cached record of user id, however old (a claim's condition checks it).
func (l *Ledger) cached(id string) (billing.User, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.users[id]
	return c.user, ok
}

// note applies the amounts (and threshold mark) of a charge this process wrote to its cached
// record of user id, so the record it decides threshold claims on keeps up with its own requests
// between reads; a charge that does not apply to it (the record's period changed) drops it.
func (l *Ledger) note(id string, c billing.Charge) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cu, ok := l.users[id]
	if !ok {
		return
	}
	// Written already: its caps were checked by the store. The view needs the counts and marks,
	// not the holds: leaving them out spares a copy of the holds map per request.
	c.Capped, c.Opens, c.Closes = false, "", ""
	if err := c.Apply(&cu.user); err != nil {
		delete(l.users, id)
		return
	}
	l.users[id] = cu
}

// RefundExpired refunds the reservations whose holds expired before now (see Store); the local
// server runs it at start and every RefundEvery, in the background.
func (l *Ledger) RefundExpired(ctx context.Context, now time.Time) (int, error) {
	return l.Store.RefundExpired(ctx, now)
}

// RefundExpiredEvery runs RefundExpired now and then every interval until ctx ends, logging what it
// refunds and what fails (retried at the next tick). It never runs on a request's path.
func (l *Ledger) RefundExpiredEvery(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		switch n, err := l.RefundExpired(ctx, time.Now()); {
		case err != nil && ctx.Err() == nil:
			log.Error("ledger: refunding expired reservations", "err", err)
		case n > 0:
			log.Info("ledger: refunded reservations not settled by their deadline", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
