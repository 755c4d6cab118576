package signing

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/go-jose/go-jose/v4"
)

// Signer signs with a keyset's current key and serves the keyset's JWKS. It is built once (at
// start, from the stored keyset) and is safe for concurrent use.
type Signer struct {
	kid     string
	signers map[jose.ContentType]jose.Signer
	jwks    []byte
}

// NewSigner returns a signer for ks that can sign payloads of the given JWS types ("typ" header),
// so a verifier can refuse one kind of signed object presented as another.
func NewSigner(ks Keyset, types ...jose.ContentType) (*Signer, error) {
	s := &Signer{kid: ks.Current.ID, signers: map[jose.ContentType]jose.Signer{}}
	key := jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: ks.Current.Private, KeyID: ks.Current.ID}}
	for _, typ := range types {
		js, err := jose.NewSigner(key, (&jose.SignerOptions{}).WithType(typ))
		if err != nil {
			return nil, fmt.Errorf("signing: %w", err)
		}
		s.signers[typ] = js
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
	js, ok := s.signers[typ]
	if !ok {
		return "", fmt.Errorf("signing: this signer was not built for typ %q", typ)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	obj, err := js.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	return obj.CompactSerialize()
}

// JWKSCacheControl lets clients and CDNs cache the JWKS for five minutes. A rotation publishes
// the key it will sign with one rotation ahead (Keyset.Next), so a cached JWKS never lacks it.
const JWKSCacheControl = "public, max-age=300"

// JWKSHandler serves GET /.well-known/jwks.json: the public keys, no authentication. The
// endpoint's routes (gateway.NewJWKS) answer another method with a 405 in the surface's envelope.
func (s *Signer) JWKSHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Header().Set("Cache-Control", JWKSCacheControl)
		_, _ = w.Write(s.jwks)
	})
}
