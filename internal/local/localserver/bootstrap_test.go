package localserver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
)

// Issue 34 item 13: the bootstrap admin key has no limits, and its user no quota — a newcomer's
// 1 001st call is not a 402 — with or without SECUREAI_BOOTSTRAP_KEY. A user that exists already
// is left as an admin set it.
func TestTheBootstrapUserHasNoQuota(t *testing.T) {
	ctx := context.Background()
	for _, secret := range []string{"", apikey.NewSecret()} {
		store, err := boltstore.Open(filepath.Join(t.TempDir(), "gateway.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		made, err := Bootstrap(ctx, store, secret)
		if err != nil {
			t.Fatal(err)
		}
		if made == "" {
			made = secret // the key asked for, created
		}
		hash, _ := apikey.Hash(made)
		k, err := store.KeyByHash(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		u, err := store.User(ctx, billing.UserID(k))
		if err != nil || u.HasQuota() {
			t.Fatalf("secret set %v: the bootstrap key's user %+v (%v), want one with no quota", secret != "", u, err)
		}
		// Points are still counted, and any number is held.
		if err := store.Charge(ctx, u.ID, billing.Charge{Period: u.PeriodStart, Points: 5000, Capped: true, PointsCap: u.MonthlyPoints}); err != nil {
			t.Errorf("charging 5000 points: %v", err)
		}
		if u, _ := store.User(ctx, u.ID); u.PointsUsed != 5000 {
			t.Errorf("points used %d, want 5000", u.PointsUsed)
		}
	}

	// A store whose bootstrap user an admin gave a quota keeps it.
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "gateway.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.CreateUser(ctx, billing.NewUser("admin", billing.Defaults{MonthlyPoints: 70}, time.Now())); err != nil {
		t.Fatal(err)
	}
	if _, err := Bootstrap(ctx, store, ""); err != nil {
		t.Fatal(err)
	}
	if u, _ := store.User(ctx, "admin"); u.MonthlyPoints != 70 {
		t.Errorf("the existing user's allowance became %d", u.MonthlyPoints)
	}
}
