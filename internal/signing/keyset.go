// Package signing holds the gateway's Ed25519 signing keys and signs what the gateway vouches for
// (entitlement tokens, receipts) as compact JWS (EdDSA) whose kid names a key in the published
// JWKS. Signing is local — the key is loaded once, at start — so a token costs no network hop.
//
// Rotation is two-phase: a keyset has a current key (signs), a next key (published, not yet used)
// and previous keys (published, no longer used). Rotate promotes next to current, so a JWKS loaded
// or cached before the rotation already holds the key new tokens are signed with, and everything
// signed by the old current key keeps verifying while it stays among the previous keys.
package signing

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// DefaultKeepPrevious is how many retired keys Rotate keeps published. It bounds how far back a
// receipt still verifies: rotating monthly keeps a year of receipts verifiable.
const DefaultKeepPrevious = 12

// Key is one Ed25519 signing key.
type Key struct {
	ID      string // the JWKS kid: the RFC 7638 thumbprint of the public key
	Private ed25519.PrivateKey
	Created time.Time
}

// Keyset is the gateway's signing keys.
type Keyset struct {
	Current  Key
	Next     Key
	Previous []Key // newest first
}

// ErrNoKeyset is a store holding no keyset yet: run `admin rotate-signing-key` once.
var ErrNoKeyset = errors.New("signing: no signing keyset stored yet (run `admin rotate-signing-key` once to create it)")

// NewKey returns a fresh key created at now.
func NewKey(now time.Time) (Key, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return Key{}, fmt.Errorf("signing: generating a key: %w", err)
	}
	return keyFrom(priv, now.UTC())
}

func keyFrom(priv ed25519.PrivateKey, created time.Time) (Key, error) {
	jwk := jose.JSONWebKey{Key: priv.Public()}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return Key{}, fmt.Errorf("signing: thumbprint: %w", err)
	}
	return Key{ID: base64.RawURLEncoding.EncodeToString(tp), Private: priv, Created: created}, nil
}

// NewKeyset returns a first keyset: a current and a next key, no previous ones.
func NewKeyset(now time.Time) (Keyset, error) {
	cur, err := NewKey(now)
	if err != nil {
		return Keyset{}, err
	}
	next, err := NewKey(now)
	if err != nil {
		return Keyset{}, err
	}
	return Keyset{Current: cur, Next: next}, nil
}

// Rotate returns the keyset after one rotation: next signs from now on, the old current joins the
// previous keys (at most keep of them stay published, newest first), and a fresh key becomes next.
func (ks Keyset) Rotate(now time.Time, keep int) (Keyset, error) {
	fresh, err := NewKey(now)
	if err != nil {
		return Keyset{}, err
	}
	prev := append([]Key{ks.Current}, ks.Previous...)
	if len(prev) > keep {
		prev = prev[:keep]
	}
	return Keyset{Current: ks.Next, Next: fresh, Previous: prev}, nil
}

// JWKS is the public keys a verifier needs: current, next and previous.
func (ks Keyset) JWKS() jose.JSONWebKeySet {
	set := jose.JSONWebKeySet{}
	for _, k := range append([]Key{ks.Current, ks.Next}, ks.Previous...) {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Private.Public(), KeyID: k.ID, Algorithm: string(jose.EdDSA), Use: "sig"})
	}
	return set
}

// storedKey is a key as stores keep it: a private JWK plus its creation time.
type storedKey struct {
	JWK     jose.JSONWebKey `json:"jwk"`
	Created time.Time       `json:"created"`
}

type storedKeyset struct {
	Current  storedKey   `json:"current"`
	Next     storedKey   `json:"next"`
	Previous []storedKey `json:"previous"`
}

// MarshalJSON is the keyset's stored form (private keys included: stores keep it secret).
func (ks Keyset) MarshalJSON() ([]byte, error) {
	enc := func(k Key) storedKey {
		return storedKey{JWK: jose.JSONWebKey{Key: k.Private, KeyID: k.ID, Algorithm: string(jose.EdDSA), Use: "sig"}, Created: k.Created}
	}
	out := storedKeyset{Current: enc(ks.Current), Next: enc(ks.Next), Previous: []storedKey{}}
	for _, k := range ks.Previous {
		out.Previous = append(out.Previous, enc(k))
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads the stored form, checking every key is an Ed25519 private key whose kid is
// its thumbprint. Errors never quote the input: it is secret.
func (ks *Keyset) UnmarshalJSON(raw []byte) error {
	var in storedKeyset
	if err := json.Unmarshal(raw, &in); err != nil {
		return errors.New("signing: the stored keyset is not valid JSON of the expected shape")
	}
	dec := func(what string, s storedKey) (Key, error) {
		priv, ok := s.JWK.Key.(ed25519.PrivateKey)
		if !ok {
			return Key{}, fmt.Errorf("signing: the stored keyset's %s key is not an Ed25519 private key", what)
		}
		k, err := keyFrom(priv, s.Created)
		if err == nil && k.ID != s.JWK.KeyID {
			err = fmt.Errorf("signing: the stored keyset's %s key has kid %q, not its thumbprint", what, s.JWK.KeyID)
		}
		return k, err
	}
	var out Keyset
	var err error
	if out.Current, err = dec("current", in.Current); err != nil {
		return err
	}
	if out.Next, err = dec("next", in.Next); err != nil {
		return err
	}
	for i, s := range in.Previous {
		k, err := dec(fmt.Sprintf("previous[%d]", i), s)
		if err != nil {
			return err
		}
		out.Previous = append(out.Previous, k)
	}
	*ks = out
	return nil
}
