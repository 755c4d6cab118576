// Package idempotency makes a request carrying an Idempotency-Key run at most once per API key:
// a repeat gets the first result back (same body, nothing called or billed again), a concurrent
// repeat waits for the first, and reusing a key for a different request is refused. The store
// behind it is an interface so the embedded (bbolt) and the cloud (DynamoDB) stores behave alike;
// storetest holds the contract both must pass.
package idempotency

import (
	"context"
	"errors"
	"time"
)

// Record is the outcome of a finished request, kept to be replayed.
type Record struct {
	RequestHash string
	Status      int
	ContentType string
	// Body is the response exactly as sent, SSE frames included for a stream. A stream's body
	// can reach a few hundred KB; a store with an item limit should compress it.
	Body      []byte
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Pending is what a claimant writes while its request runs.
type Pending struct {
	RequestHash string
	Token       string    // identifies this claimant, so only it can complete or release
	Now         time.Time // the clock every expiry is judged by
	LeaseUntil  time.Time // after this, a claimant that never finished is presumed dead
}

// State is what Claim found.
type State int

const (
	// Owned: the caller holds the key now and must Complete or Release it.
	Owned State = iota + 1
	// Completed: a finished record exists; replay it.
	Completed
	// InProgress: another claimant holds the key and has not finished.
	InProgress
)

// Claim is Claim's answer.
type Claim struct {
	State State
	// RequestHash is the hash of the request holding the key (InProgress and Completed).
	RequestHash string
	Record      *Record // set when Completed
}

// Store keeps claims and records, scoped (by API key id) so two keys never share a namespace.
//
// Expired entries — a Record past ExpiresAt or a Pending past LeaseUntil, judged against the
// Pending.Now passed in — count as absent when read, because DynamoDB's TTL deletes lazily.
type Store interface {
	// Claim atomically takes the key if it is absent or expired; otherwise it reports what holds it.
	Claim(ctx context.Context, scope, key string, p Pending) (Claim, error)
	// Complete replaces the claimant's pending entry with rec. ErrNotOwner if token no longer holds it.
	Complete(ctx context.Context, scope, key, token string, rec Record) error
	// Release deletes the claimant's pending entry so a retry can run. ErrNotOwner if token no
	// longer holds it (its lease ran out and someone else claimed it, or it was never claimed) —
	// also when the key is absent because this release's own first try, whose answer was lost,
	// deleted it: a caller that only wants the key free takes ErrNotOwner as done.
	Release(ctx context.Context, scope, key, token string) error
}

// ErrNotOwner is returned by Complete and Release for a token that does not hold the key.
var ErrNotOwner = errors.New("idempotency: the key is not held by this claimant")
