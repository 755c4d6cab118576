package boltstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
)

func TestReceiptsContract(t *testing.T) {
	storetest.RunReceipts(t, func(t *testing.T) receipt.Store { return openStore(t) })
}

// A bundle id is looked up in the file only when it is not above the greatest id there; that
// bound must come from the file when the store opens, or a duplicate of a receipt committed
// before a restart would be taken.
func TestAReceiptCommittedBeforeARestartStillRefusesItsDuplicate(t *testing.T) {
	dir := t.TempDir()
	s, err := boltstore.Open(dir + "/g.db")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rec := receipt.Record{BundleID: "set_9", KeyID: "key_1", JWS: "h.p.s", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	if err := s.PutReceipt(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = boltstore.Open(dir + "/g.db"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dup := rec
	dup.KeyID = "key_thief"
	if err := s.PutReceipt(ctx, dup); !errors.Is(err, receipt.ErrExists) {
		t.Fatalf("duplicate after a restart: err = %v, want ErrExists", err)
	}
	for _, id := range []string{"set_1", "set_99"} { // below and above the greatest id there
		older := rec
		older.BundleID = id
		if err := s.PutReceipt(ctx, older); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if got, err := s.Receipt(ctx, id); err != nil || got.KeyID != "key_1" {
			t.Fatalf("%s: got %+v, %v", id, got, err)
		}
	}
}
