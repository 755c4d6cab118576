package boltstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/idempotency"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
)

func TestIdempotencyContract(t *testing.T) {
	storetest.RunIdempotency(t, func(t *testing.T) idempotency.Store {
		s, err := Open(filepath.Join(t.TempDir(), "gateway.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// Only one process can open the file, so a claim found on opening it was left by a process that
// died mid-request: the retry runs at once. Finished records survive the restart.
func TestIdempotencyClaimOfADeadProcessIsReleasedOnOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gateway.db")
	now := time.Now()
	pending := func(token string) idempotency.Pending {
		return idempotency.Pending{RequestHash: "h", Token: token, Now: now, LeaseUntil: now.Add(time.Hour)}
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"running", "done"} {
		if c, err := s.Claim(ctx, "key_1", key, pending("dead")); err != nil || c.State != idempotency.Owned {
			t.Fatalf("Claim(%s) = %v, %v", key, c.State, err)
		}
	}
	if err := s.Complete(ctx, "key_1", "done", "dead", idempotency.Record{RequestHash: "h", Status: 200,
		Body: []byte("{}"), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // the process is gone; its claim on "running" stays in the file
		t.Fatal(err)
	}

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for key, want := range map[string]idempotency.State{"running": idempotency.Owned, "done": idempotency.Completed} {
		if c, err := s.Claim(ctx, "key_1", key, pending("alive")); err != nil || c.State != want {
			t.Errorf("after reopening, Claim(%s) = %v, %v; want %v", key, c.State, err, want)
		}
	}
}
