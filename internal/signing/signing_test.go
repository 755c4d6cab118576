package signing

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

const typTest jose.ContentType = "test+jwt"

var now = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)

func newKeyset(t *testing.T) Keyset {
	t.Helper()
	ks, err := NewKeyset(now)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func sign(t *testing.T, ks Keyset) string {
	t.Helper()
	s, err := NewSigner(ks, typTest)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Sign(typTest, map[string]string{"hello": "world"})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// verifies checks tok the way any JOSE library would: by kid against a published JWKS.
func verifies(t *testing.T, tok string, jwks jose.JSONWebKeySet) bool {
	t.Helper()
	obj, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		t.Fatal(err)
	}
	keys := jwks.Key(obj.Signatures[0].Header.KeyID)
	if len(keys) != 1 {
		return false
	}
	payload, err := obj.Verify(keys[0])
	return err == nil && string(payload) == `{"hello":"world"}`
}

func TestRotationKeepsOldSignaturesVerifying(t *testing.T) {
	ks := newKeyset(t)
	old := sign(t, ks)
	rotated, err := ks.Rotate(now.Add(time.Hour), 1)
	if err != nil {
		t.Fatal(err)
	}
	fresh := sign(t, rotated)
	if !verifies(t, old, rotated.JWKS()) {
		t.Error("a token signed before the rotation no longer verifies")
	}
	if !verifies(t, fresh, ks.JWKS()) {
		t.Error("the JWKS published before the rotation lacks the key that signs after it")
	}
	twice, _ := rotated.Rotate(now.Add(2*time.Hour), 1)
	thrice, _ := twice.Rotate(now.Add(3*time.Hour), 1)
	if verifies(t, old, thrice.JWKS()) {
		t.Error("a key retired beyond keep is still published")
	}
}

func TestJWKSIsPublicOnly(t *testing.T) {
	ks := newKeyset(t)
	s, err := NewSigner(ks, typTest)
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(s.JWKS(), &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 2 {
		t.Fatalf("%d keys, want current and next", len(set.Keys))
	}
	for _, k := range set.Keys {
		if k["kty"] != "OKP" || k["crv"] != "Ed25519" || k["alg"] != "EdDSA" || k["d"] != nil || k["kid"] == "" {
			t.Errorf("published key %v", k)
		}
	}
}

func TestSignerRefusesUnknownType(t *testing.T) {
	s, _ := NewSigner(newKeyset(t), typTest)
	if _, err := s.Sign("other+jwt", 1); err == nil {
		t.Error("signed a type the signer was not built for")
	}
}

func TestStoredFormRoundTripsAndIsChecked(t *testing.T) {
	ks, _ := newKeyset(t).Rotate(now, 3)
	raw, err := json.Marshal(ks)
	if err != nil {
		t.Fatal(err)
	}
	var back Keyset
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Current.ID != ks.Current.ID || !back.Next.Private.Equal(ks.Next.Private) || len(back.Previous) != 1 {
		t.Errorf("round trip lost data: %+v", back)
	}
	tampered := strings.Replace(string(raw), ks.Current.ID, "forged", 1)
	if err := json.Unmarshal([]byte(tampered), &back); err == nil || !strings.Contains(err.Error(), "thumbprint") {
		t.Errorf("a kid that is not the key's thumbprint was accepted: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"current":"sk-secret"}`), &back); err == nil || strings.Contains(err.Error(), "sk-secret") {
		t.Errorf("bad input: err %v (must not quote the input)", err)
	}
}

// The signer writes the JWS itself (one Ed25519 operation over a header made once); what it
// writes must be exactly go-jose's JWS for the same key, type and payload.
func TestSignaturesAreGoJoseBytesForBytes(t *testing.T) {
	ks := newKeyset(t)
	s, err := NewSigner(ks, typTest, "other+jws")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []jose.ContentType{typTest, "other+jws"} {
		js, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: ks.Current.Private, KeyID: ks.Current.ID}},
			(&jose.SignerOptions{}).WithType(typ))
		if err != nil {
			t.Fatal(err)
		}
		for _, payload := range []string{`{}`, `{"hello":"world"}`, `{"a":"` + strings.Repeat("é~?", 100) + `"}`} {
			obj, err := js.Sign([]byte(payload))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := obj.CompactSerialize()
			got, err := s.SignPayload(typ, []byte(payload))
			if err != nil || got != want {
				t.Fatalf("typ %s payload %s:\n got %s (%v)\nwant %s", typ, payload, got, err, want)
			}
		}
	}
	if _, err := s.SignPayload("unknown+jws", []byte(`{}`)); err == nil {
		t.Fatal("a type the signer was not built for was signed")
	}
}
