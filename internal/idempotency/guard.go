package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
)

// TTL is how long a finished result is replayed.
const TTL = 24 * time.Hour

// MaxKeyLen bounds an Idempotency-Key header.
const MaxKeyLen = 255

// Guard runs the claim protocol over a Store.
type Guard struct {
	Store Store
	TTL   time.Duration // how long results are kept; default TTL
	// Lease is how long a claim holds before a crashed claimant's key may be taken over. It must
	// outlast the longest request, or a slow request could run twice. A claimant whose context has
	// a deadline claims only until that deadline: it cannot run past it, so a claim that outlived
	// it could only lock the key after a crash (a Lambda killed mid-request frees its key when its
	// invocation would have ended).
	Lease time.Duration
	// AnswerMargin is how long before its own deadline a waiting repeat stops waiting, so its 409
	// still reaches the caller (a Lambda cannot answer after its deadline); default 1 s.
	AnswerMargin time.Duration
	Now          func() time.Time // default time.Now
	// PollMin and PollMax bound the waiter's backoff; defaults 20 ms and 500 ms.
	PollMin, PollMax time.Duration
}

// MismatchError is a key reused for a different request.
type MismatchError struct{ Key string }

func (e *MismatchError) Error() string {
	return fmt.Sprintf("Idempotency-Key %q was already used for a different request; use a new key for a new request", fault.Clip(e.Key, 64))
}

// Fault implements fault.Describer: 422, as in the IETF Idempotency-Key draft.
func (e *MismatchError) Fault() *fault.Error {
	return fault.New(fault.Unprocessable, "Idempotency key reused", e.Error()).WithCode("idempotency_key_reused")
}

// InProgressError is a repeat that gave up waiting for the first request to finish.
type InProgressError struct{ Key string }

func (e *InProgressError) Error() string {
	return fmt.Sprintf("a request with Idempotency-Key %q is still in progress; retry later", fault.Clip(e.Key, 64))
}

// Fault implements fault.Describer: 409, with a hint to come back soon.
func (e *InProgressError) Fault() *fault.Error {
	return fault.New(fault.Conflict, "Request in progress", e.Error()).WithCode("idempotency_in_progress").WithRetryAfter(time.Second)
}

// RequestHash identifies a request: its route and exact body bytes.
func RequestHash(route string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(route))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Ticket is a held key; exactly one of Complete or Release must follow.
type Ticket struct {
	g                 *Guard
	scope, key, token string
	hash              string
}

// Begin claims key for the request hashed as hash. It returns a Ticket when the caller should run
// the request, or the Record to replay. A repeat arriving while the first runs waits for it,
// polling the store (as a DynamoDB deployment must: the waiter may be another Lambda), and gives
// up with an *InProgressError AnswerMargin before ctx's deadline, or when ctx ends.
func (g *Guard) Begin(ctx context.Context, scope, key, hash string) (*Ticket, *Record, error) {
	token := newToken()
	wait := g.pollMin()
	// Remaining times are measured on the real clock (a context deadline is one) and applied to
	// g.now, so a test clock and a real deadline compose.
	deadline, hasDeadline := ctx.Deadline()
	for {
		now := g.now()
		lease := g.lease()
		var left time.Duration
		if hasDeadline {
			left = time.Until(deadline)
			lease = max(min(lease, left), 0)
		}
		c, err := g.Store.Claim(ctx, scope, key, Pending{RequestHash: hash, Token: token, Now: now, LeaseUntil: now.Add(lease)})
		if err != nil {
			return nil, nil, fmt.Errorf("idempotency: claim: %w", err)
		}
		if c.State != Owned && c.RequestHash != hash {
			return nil, nil, &MismatchError{Key: key}
		}
		switch c.State {
		case Owned:
			return &Ticket{g: g, scope: scope, key: key, token: token, hash: hash}, nil, nil
		case Completed:
			return nil, c.Record, nil
		}
		if hasDeadline {
			// Waiting on would leave no time to answer: say so now, while the caller can hear it.
			if left -= g.answerMargin(); left <= 0 {
				return nil, nil, &InProgressError{Key: key}
			}
			wait = min(wait, left)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, &InProgressError{Key: key}
		case <-t.C:
		}
		wait = min(2*wait, g.pollMax())
	}
}

// Complete records the result to be replayed. It outlives the request's context: the answer
// was already sent and billed, so losing the record would let a retry run it again.
func (t *Ticket) Complete(ctx context.Context, status int, contentType string, body []byte) error {
	now := t.g.now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return t.g.Store.Complete(ctx, t.scope, t.key, t.token, Record{
		RequestHash: t.hash, Status: status, ContentType: contentType, Body: body,
		CreatedAt: now, ExpiresAt: now.Add(t.g.ttl()),
	})
}

// Release gives the key up so a retry runs afresh (the request failed, nothing worth replaying).
func (t *Ticket) Release(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return t.g.Store.Release(ctx, t.scope, t.key, t.token)
}

func (g *Guard) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func (g *Guard) ttl() time.Duration   { return orDefault(g.TTL, TTL) }
func (g *Guard) lease() time.Duration { return orDefault(g.Lease, 10*time.Minute) }
func (g *Guard) answerMargin() time.Duration {
	return orDefault(g.AnswerMargin, time.Second)
}
func (g *Guard) pollMin() time.Duration {
	return orDefault(g.PollMin, 20*time.Millisecond)
}
func (g *Guard) pollMax() time.Duration {
	return orDefault(g.PollMax, 500*time.Millisecond)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CheckKey reports whether an Idempotency-Key value is usable: 1 to MaxKeyLen visible ASCII
// characters, so it can be stored and logged as it is.
func CheckKey(k string) error {
	if k == "" || len(k) > MaxKeyLen {
		return fmt.Errorf("Idempotency-Key must be 1 to %d characters", MaxKeyLen)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return fmt.Errorf("Idempotency-Key must be visible ASCII characters (no spaces)")
		}
	}
	return nil
}
