package signing

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-jose/go-jose/v4"
)

// Signer signs with a keyset's current key and serves the keyset's JWKS. It is built once (at
// start, from the stored keyset) and is safe for concurrent use.
type Signer struct {
	kid  string
	key  ed25519.PrivateKey
	jwks []byte
	// headers holds each type's protected header, base64url-encoded, as go-jose writes it. A
	// signature is then one Ed25519 operation over header.payload: go-jose would marshal and
	// encode the same header again for every token and receipt, on the answer's path.
	headers map[jose.ContentType]string
}

// NewSigner returns a signer for ks that can sign payloads of the given JWS types ("typ" header),
// so a verifier can refuse one kind of signed object presented as another.
func NewSigner(ks Keyset, types ...jose.ContentType) (*Signer, error) {
	s := &Signer{kid: ks.Current.ID, key: ks.Current.Private, headers: map[jose.ContentType]string{}}
	key := jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: ks.Current.Private, KeyID: ks.Current.ID}}
	for _, typ := range types {
		js, err := jose.NewSigner(key, (&jose.SignerOptions{}).WithType(typ))
		if err != nil {
			return nil, fmt.Errorf("signing: %w", err)
		}
		// The header is go-jose's own: the first part of a JWS it signs.
		obj, err := js.Sign([]byte("{}"))
		if err != nil {
			return nil, fmt.Errorf("signing: %w", err)
		}
		compact, err := obj.CompactSerialize()
		if err != nil {
			return nil, fmt.Errorf("signing: %w", err)
		}
		s.headers[typ], _, _ = strings.Cut(compact, ".")
	}
	var err error
	if s.jwks, err = json.Marshal(ks.JWKS()); err != nil {
		return nil, fmt.Errorf("signing: marshalling the JWKS: %w", err)
	}
	return s, nil
}

// KeyID is the kid new signatures carry.
func (s *Signer) KeyID() string { return s.kid }

// Sign returns claims, as JSON, signed as a compact JWS of type typ.
func (s *Signer) Sign(typ jose.ContentType, claims any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	return s.SignPayload(typ, payload)
}

// SignPayload returns payload signed as a compact JWS of type typ: exactly what go-jose would
// produce (Ed25519 signatures are deterministic), so any JOSE library verifies it.
func (s *Signer) SignPayload(typ jose.ContentType, payload []byte) (string, error) {
	header, ok := s.headers[typ]
	if !ok {
		return "", fmt.Errorf("signing: this signer was not built for typ %q", typ)
	}
	enc := base64.RawURLEncoding
	n := len(header) + 1 + enc.EncodedLen(len(payload))
	b := make([]byte, n, n+1+enc.EncodedLen(ed25519.SignatureSize))
	copy(b, header)
	b[len(header)] = '.'
	enc.Encode(b[len(header)+1:], payload)
	sig := ed25519.Sign(s.key, b)
	b = append(b, '.')
	b = enc.AppendEncode(b, sig)
	return string(b), nil
}

// JWKSCacheControl lets clients and CDNs cache the JWKS for five minutes. A rotation publishes
// the key it will sign with one rotation ahead (Keyset.Next), so a cached JWKS never lacks it.
const JWKSCacheControl = "public, max-age=300"

// JWKS is the public keys as a JWK set, GET /.well-known/jwks.json's body: marshalled once,
// shared, not to be modified.
func (s *Signer) JWKS() []byte { return s.jwks }
