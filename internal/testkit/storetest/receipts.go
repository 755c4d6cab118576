package storetest

// The receipt store contract (receipt.Store).

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/signing"
)

// RunReceipts runs the receipt store contract. newStore must return an empty store.
func RunReceipts(t *testing.T, newStore func(t *testing.T) receipt.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s receipt.Store)
	}{
		{"a receipt round-trips exactly", receiptsRoundTrip},
		{"an unknown bundle id is ErrNotFound", receiptsNotFound},
		{"a second receipt for one bundle id is refused", receiptsDuplicate},
		{"a receipt past its retention reads as absent and may be replaced", receiptsExpired},
		{"a drafted receipt is kept and read signed", receiptsDrafted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

func receiptFixture(id string, expires time.Time) receipt.Record {
	return receipt.Record{BundleID: id, KeyID: "key_" + id, JWS: "h.p." + id,
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond).Add(123 * time.Nanosecond), ExpiresAt: expires.UTC()}
}

func receiptsRoundTrip(t *testing.T, s receipt.Store) {
	ctx := context.Background()
	want := receiptFixture("set_1", time.Now().Add(time.Hour))
	if err := s.PutReceipt(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Receipt(ctx, "set_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.BundleID != want.BundleID || got.KeyID != want.KeyID || got.JWS != want.JWS ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func receiptsNotFound(t *testing.T, s receipt.Store) {
	if _, err := s.Receipt(context.Background(), "set_missing"); !errors.Is(err, receipt.ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
}

func receiptsDuplicate(t *testing.T, s receipt.Store) {
	ctx := context.Background()
	first := receiptFixture("set_2", time.Now().Add(time.Hour))
	if err := s.PutReceipt(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := first
	second.KeyID, second.JWS = "key_thief", "forged"
	if err := s.PutReceipt(ctx, second); !errors.Is(err, receipt.ErrExists) {
		t.Fatalf("second put err = %v, want ErrExists", err)
	}
	if got, _ := s.Receipt(ctx, "set_2"); got.KeyID != first.KeyID || got.JWS != first.JWS {
		t.Errorf("the first receipt was overwritten: %+v", got)
	}
}

func receiptsExpired(t *testing.T, s receipt.Store) {
	ctx := context.Background()
	if err := s.PutReceipt(ctx, receiptFixture("set_3", time.Now().Add(-time.Second))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Receipt(ctx, "set_3"); !errors.Is(err, receipt.ErrNotFound) {
		t.Errorf("expired receipt: err = %v, want ErrNotFound", err)
	}
	fresh := receiptFixture("set_3", time.Now().Add(time.Hour))
	if err := s.PutReceipt(ctx, fresh); err != nil {
		t.Fatalf("replacing an expired receipt: %v", err)
	}
	if got, err := s.Receipt(ctx, "set_3"); err != nil || got.JWS != fresh.JWS {
		t.Errorf("got %+v, %v", got, err)
	}
}

// receiptsDrafted: a draft (receipt.Issuer.Draft) leaves its signature to the store; whenever it
// is read — before or after the store commits it — it is the receipt Issuer.Sign would have made.
func receiptsDrafted(t *testing.T, s receipt.Store) {
	ctx := context.Background()
	ks, err := signing.NewKeyset(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.NewSigner(ks, receipt.Type)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	issuer := &receipt.Issuer{Signer: signer, Now: func() time.Time { return now }}
	claims := receipt.Claims{BundleID: "set_draft", KeyID: "key_draft", ServedModel: "p/m", Policy: receipt.Policy{Name: "public"}}
	draft, err := issuer.Draft(claims)
	if err != nil {
		t.Fatal(err)
	}
	want, err := issuer.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	if draft.JWS != "" {
		t.Fatalf("a draft carries a JWS: %q", draft.JWS)
	}
	if err := s.PutReceipt(ctx, draft); err != nil {
		t.Fatal(err)
	}
	for _, when := range []string{"at once", "a second later"} {
		got, err := s.Receipt(ctx, "set_draft")
		if err != nil || got.JWS != want.JWS || got.KeyID != "key_draft" {
			t.Fatalf("%s: got %+v, %v; want the JWS %q", when, got, err, want.JWS)
		}
		obj, err := jose.ParseSignedCompact(got.JWS, []jose.SignatureAlgorithm{jose.EdDSA})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := obj.Verify(ks.Current.Private.Public()); err != nil {
			t.Fatalf("%s: the stored receipt does not verify: %v", when, err)
		}
		time.Sleep(time.Second) // past the embedded store's commit interval
	}
}
