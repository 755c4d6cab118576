package signing

import (
	"context"
	"errors"
	"time"
)

// Store keeps the keyset: the embedded store locally (internal/store/boltstore), Secrets Manager in the
// cloud (internal/aws/awssecrets).
type Store interface {
	// Keyset returns the stored keyset, ErrNoKeyset when there is none.
	Keyset(ctx context.Context) (Keyset, error)
	// UpdateKeyset replaces the stored keyset with update's result, atomically where the backend
	// allows. update gets the stored keyset, or ok=false when none exists yet; an error from
	// update writes nothing.
	UpdateKeyset(ctx context.Context, update func(cur Keyset, ok bool) (Keyset, error)) (Keyset, error)
}

// Rotate rotates the stored keyset, creating the first one when none exists. Running gateways
// keep signing with their loaded key until they restart (a Lambda: its next cold start); that key
// stays published among the previous keys, so nothing they signed stops verifying.
func Rotate(ctx context.Context, s Store, now time.Time, keep int) (Keyset, error) {
	return s.UpdateKeyset(ctx, func(cur Keyset, ok bool) (Keyset, error) {
		if !ok {
			return NewKeyset(now)
		}
		return cur.Rotate(now, keep)
	})
}

// Ensure returns the stored keyset, creating the first one when none exists. Local runs call it at
// start; the cloud does not (two cold starts racing would each create one): there the deploy runs
// `admin rotate-signing-key` once.
func Ensure(ctx context.Context, s Store, now time.Time) (Keyset, error) {
	if ks, err := s.Keyset(ctx); !errors.Is(err, ErrNoKeyset) {
		return ks, err
	}
	return s.UpdateKeyset(ctx, func(cur Keyset, ok bool) (Keyset, error) {
		if ok {
			return cur, nil
		}
		return NewKeyset(now)
	})
}
