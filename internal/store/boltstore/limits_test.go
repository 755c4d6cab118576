package boltstore_test

import (
	"context"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"path/filepath"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
)

// TestRequestCountsSurviveARestart: the local counter saved at shutdown is restored from the file
// by the next process, so a restart does not hand every key a fresh allowance.
func TestRequestCountsSurviveARestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gateway.db")
	now := time.Date(2026, 12, 1, 10, 15, 30, 0, time.UTC)
	k := &apikey.Key{ID: "k", DailyLimit: 3}

	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	mem := limits.NewMemory()
	for range 3 {
		if err := admit(mem, k, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := mem.Persist(ctx, s, now); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	restored := limits.NewMemory()
	if err := restored.Restore(ctx, s, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := admit(restored, k, now.Add(time.Minute)); err == nil {
		t.Error("the 4th request of the day was admitted after a restart, want the daily limit to hold")
	}
}

// admit counts a request as a completion's admission does in a deployment that bills nothing.
func admit(m *limits.Memory, k *apikey.Key, now time.Time) error {
	_, err := (&ledger.Ledger{Store: ledger.Local{Counter: m}, Limits: true}).Admit(context.Background(), k, nil, billing.Estimate{}, now)
	return err
}
