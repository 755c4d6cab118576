package webhook

import (
	"context"
	"time"
)

// Store keeps endpoints and their recent delivery attempts.
type Store interface {
	CreateEndpoint(ctx context.Context, e *Endpoint) error
	// Endpoint returns ErrNotFound for an unknown id.
	Endpoint(ctx context.Context, id string) (*Endpoint, error)
	// Endpoints lists every endpoint, oldest first.
	Endpoints(ctx context.Context) ([]Endpoint, error)
	// UpdateEndpoint applies fn to the stored endpoint atomically (no concurrent update is lost)
	// and returns the result; fn's error aborts the update and is returned.
	UpdateEndpoint(ctx context.Context, id string, fn func(*Endpoint) error) (*Endpoint, error)
	// DeleteEndpoint removes the endpoint and its attempts; ErrNotFound if there is none.
	DeleteEndpoint(ctx context.Context, id string) error
	RecordAttempt(ctx context.Context, a Attempt) error
	// Attempts returns the endpoint's most recent attempts, newest first, at most limit.
	Attempts(ctx context.Context, endpointID string, limit int) ([]Attempt, error)
}

// AttemptsKept is how many attempts a store keeps per endpoint at least; older ones may go.
const AttemptsKept = 100

// AttemptRetention is how long a store keeps attempts at least.
const AttemptRetention = 30 * 24 * time.Hour

// Pending keeps deliveries waiting for their next attempt in the embedded store, so a restarted
// local gateway resumes them. (In the cloud, SQS is the wait.)
type Pending interface {
	// Put stores d, due at due; a delivery already stored for the same (ID, Attempt) is replaced.
	Put(ctx context.Context, d Delivery, due time.Time) error
	// Due returns up to limit deliveries due at now, earliest first.
	Due(ctx context.Context, now time.Time, limit int) ([]Delivery, error)
	// Remove forgets d's (ID, Attempt).
	Remove(ctx context.Context, d Delivery) error
}
