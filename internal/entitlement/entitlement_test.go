package entitlement

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/secureai-gateway/gateway/internal/signing"
)

// TestMintBindsTheAttempt decodes the token with go-jose alone and checks every claim SPEC 8 names.
func TestMintBindsTheAttempt(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	ks, _ := signing.NewKeyset(now)
	s, err := signing.NewSigner(ks, Type)
	if err != nil {
		t.Fatal(err)
	}
	m := &Minter{Signer: s, Now: func() time.Time { return now }}
	body := []byte(`{"model":"gpt-5-nano","messages":[]}`)
	a := Attempt{KeyID: "key_1", Model: "openai/gpt-5-nano", Provider: "openai", PolicyHash: "ph", Body: body}
	tok, err := m.Mint(a)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := jose.ParseSignedCompact(tok.Compact, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		t.Fatal(err)
	}
	if h := obj.Signatures[0].Header; h.KeyID != ks.Current.ID || h.ExtraHeaders[jose.HeaderType] != string(Type) {
		t.Errorf("header kid %q typ %v", h.KeyID, h.ExtraHeaders[jose.HeaderType])
	}
	payload, err := obj.Verify(ks.Current.Private.Public())
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	_ = json.Unmarshal(payload, &c)
	sum := sha256.Sum256(body)
	want := map[string]any{"sub": "key_1", "model": "openai/gpt-5-nano", "aud": "openai", "policy_hash": "ph",
		"body_sha256": hex.EncodeToString(sum[:]), "iat": float64(now.Unix()), "exp": float64(now.Add(DefaultTTL).Unix()), "jti": tok.ID}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("claim %s = %v, want %v", k, c[k], v)
		}
	}
	again, _ := m.Mint(a)
	if again.ID == tok.ID || len(tok.ID) != 36 {
		t.Errorf("jti %q then %q: want unique, 36 characters", tok.ID, again.ID)
	}
}

// A token no provider receives has its claims and no signature.
func TestAnUnsentTokenIsNotSigned(t *testing.T) {
	ks, _ := signing.NewKeyset(time.Now())
	s, err := signing.NewSigner(ks, Type)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"model":"m"}`)
	tok, err := (&Minter{Signer: s}).Mint(Attempt{KeyID: "key_1", Model: "p/m", Provider: "p", Body: body, Unsent: true})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if tok.Compact != "" || len(tok.ID) != 36 || tok.BodySHA256 != hex.EncodeToString(sum[:]) || tok.Subject != "key_1" {
		t.Errorf("unsent token = %+v; want its claims and no JWS", tok)
	}
}

// Ids minted later sort later (the store appends receipts), and never repeat.
func TestIDsSortByTime(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	a, b, c := NewID(t0), NewID(t0), NewID(t0.Add(time.Millisecond))
	if a == b || len(a) != 36 || a[:4] != "set_" {
		t.Errorf("ids %q, %q: want distinct, \"set_\" and 32 hex digits", a, b)
	}
	if !(a < c && b < c) {
		t.Errorf("an id a millisecond later (%q) does not sort after %q and %q", c, a, b)
	}
}
