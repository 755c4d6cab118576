// Package storetest holds contract tests every store implementation must pass, so the embedded
// store and the DynamoDB store are interchangeable. A store's own _test.go calls the Run…
// functions with a constructor for a fresh, empty store.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/idempotency"
)

// RunIdempotency checks the idempotency.Store contract.
func RunIdempotency(t *testing.T, newStore func(t *testing.T) idempotency.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pending := func(hash, token string, now time.Time) idempotency.Pending {
		return idempotency.Pending{RequestHash: hash, Token: token, Now: now, LeaseUntil: now.Add(time.Minute)}
	}
	record := func(hash string, now time.Time, ttl time.Duration) idempotency.Record {
		return idempotency.Record{RequestHash: hash, Status: 200, ContentType: "application/json",
			Body: []byte(`{"id":"x"}`), CreatedAt: now, ExpiresAt: now.Add(ttl)}
	}
	mustClaim := func(t *testing.T, s idempotency.Store, scope, key string, p idempotency.Pending, want idempotency.State) idempotency.Claim {
		t.Helper()
		c, err := s.Claim(ctx, scope, key, p)
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if c.State != want {
			t.Fatalf("Claim state = %v, want %v", c.State, want)
		}
		return c
	}

	t.Run("first claim owns the key", func(t *testing.T) {
		s := newStore(t)
		mustClaim(t, s, "k1", "a", pending("h", "t1", t0), idempotency.Owned)
	})

	t.Run("second claim sees it in progress with the holder's hash", func(t *testing.T) {
		s := newStore(t)
		mustClaim(t, s, "k1", "a", pending("h1", "t1", t0), idempotency.Owned)
		c := mustClaim(t, s, "k1", "a", pending("h2", "t2", t0.Add(time.Second)), idempotency.InProgress)
		if c.RequestHash != "h1" {
			t.Errorf("RequestHash = %q, want h1", c.RequestHash)
		}
	})

	t.Run("completed record is returned intact", func(t *testing.T) {
		s := newStore(t)
		mustClaim(t, s, "k1", "a", pending("h", "t1", t0), idempotency.Owned)
		rec := record("h", t0, 24*time.Hour)
		rec.Body = []byte("data: {\"type\":\"chunk\"}\n\ndata: [DONE]\n\n")
		rec.ContentType = "text/event-stream"
		if err := s.Complete(ctx, "k1", "a", "t1", rec); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		c := mustClaim(t, s, "k1", "a", pending("h", "t2", t0.Add(time.Hour)), idempotency.Completed)
		got := c.Record
		if got == nil || c.RequestHash != "h" || got.RequestHash != "h" || got.Status != 200 || got.ContentType != rec.ContentType ||
			string(got.Body) != string(rec.Body) || !got.CreatedAt.Equal(rec.CreatedAt) || !got.ExpiresAt.Equal(rec.ExpiresAt) {
			t.Errorf("record = %+v, want %+v", got, rec)
		}
	})

	t.Run("scopes are separate", func(t *testing.T) {
		s := newStore(t)
		mustClaim(t, s, "k1", "a", pending("h", "t1", t0), idempotency.Owned)
		mustClaim(t, s, "k2", "a", pending("h", "t2", t0), idempotency.Owned)
		mustClaim(t, s, "k1", "b", pending("h", "t3", t0), idempotency.Owned)
	})

	t.Run("released key can be claimed again", func(t *testing.T) {
		s := newStore(t)
		mustClaim(t, s, "k1", "a", pending("h", "t1", t0), idempotency.Owned)
		if err := s.Release(ctx, "k1", "a", "t1"); err != nil {
			t.Fatalf("Release: %v", err)
		}
		mustClaim(t, s, "k1", "a", pending("h", "t2", t0), idempotency.Owned)
	})

	t.Run("record expires after its TTL", func(t *testing.T) {
		s := newStore(t)
		mustClaim(t, s, "k1", "a", pending("h", "t1", t0), idempotency.Owned)
		if err := s.Complete(ctx, "k1", "a", "t1", record("h", t0, 24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, s, "k1", "a", pending("h", "t2", t0.Add(24*time.Hour-time.Second)), idempotency.Completed)
		mustClaim(t, s, "k1", "a", pending("other", "t3", t0.Add(24*time.Hour)), idempotency.Owned)
	})

	t.Run("abandoned claim is taken over after its lease", func(t *testing.T) {
		s := newStore(t)
		mustClaim(t, s, "k1", "a", pending("h", "t1", t0), idempotency.Owned)
		mustClaim(t, s, "k1", "a", pending("h", "t2", t0.Add(59*time.Second)), idempotency.InProgress)
		mustClaim(t, s, "k1", "a", pending("h", "t3", t0.Add(time.Minute)), idempotency.Owned)
		// The dead claimant can no longer complete or release what t3 now holds.
		if err := s.Complete(ctx, "k1", "a", "t1", record("h", t0, time.Hour)); !errors.Is(err, idempotency.ErrNotOwner) {
			t.Errorf("Complete by a superseded claimant: err = %v, want ErrNotOwner", err)
		}
		if err := s.Release(ctx, "k1", "a", "t1"); !errors.Is(err, idempotency.ErrNotOwner) {
			t.Errorf("Release by a superseded claimant: err = %v, want ErrNotOwner", err)
		}
		if err := s.Complete(ctx, "k1", "a", "t3", record("h", t0, time.Hour)); err != nil {
			t.Errorf("Complete by the holder: %v", err)
		}
	})

	t.Run("a claim's lease ends at the claimant's deadline", func(t *testing.T) {
		s := newStore(t)
		// The guard's lease is an hour, but the claimant can run only a minute: were it to
		// crash, the key is free when its minute is up, not an hour later.
		now := t0
		g := &idempotency.Guard{Store: s, Lease: time.Hour, Now: func() time.Time { return now }}
		claimant, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if tk, _, err := g.Begin(claimant, "k1", "a", "h"); err != nil || tk == nil {
			t.Fatalf("Begin = %v, %v; want a ticket", tk, err)
		}
		mustClaim(t, s, "k1", "a", pending("h", "t2", t0.Add(58*time.Second)), idempotency.InProgress)
		mustClaim(t, s, "k1", "a", pending("h", "t3", t0.Add(time.Minute)), idempotency.Owned)
	})

	t.Run("only the holder completes or releases", func(t *testing.T) {
		s := newStore(t)
		if err := s.Release(ctx, "k1", "a", "t1"); !errors.Is(err, idempotency.ErrNotOwner) {
			t.Errorf("Release of an absent key: err = %v, want ErrNotOwner", err)
		}
		if err := s.Complete(ctx, "k1", "a", "t1", record("h", t0, time.Hour)); !errors.Is(err, idempotency.ErrNotOwner) {
			t.Errorf("Complete of an absent key: err = %v, want ErrNotOwner", err)
		}
		mustClaim(t, s, "k1", "a", pending("h", "t1", t0), idempotency.Owned)
		if err := s.Complete(ctx, "k1", "a", "t1", record("h", t0, time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, "k1", "a", "t1"); !errors.Is(err, idempotency.ErrNotOwner) {
			t.Errorf("Release of a completed record: err = %v, want ErrNotOwner", err)
		}
		mustClaim(t, s, "k1", "a", pending("h", "t2", t0), idempotency.Completed)
	})

	t.Run("concurrent claims: exactly one owner", func(t *testing.T) {
		s := newStore(t)
		const n = 16
		var owners atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				c, err := s.Claim(ctx, "k1", "race", pending("h", fmt.Sprintf("t%d", i), t0))
				if err != nil {
					errs <- err
					return
				}
				if c.State == idempotency.Owned {
					owners.Add(1)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if got := owners.Load(); got != 1 {
			t.Errorf("%d claimants own the key, want 1", got)
		}
	})
}
