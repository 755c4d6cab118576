// Package entitlement mints the Signed Entitlement Token of each attempt: a compact JWS (EdDSA)
// binding the key, the attempt's model and provider, the SMLTP policy hash and the SHA-256 of the
// exact bytes sent upstream. Minting re-runs per attempt, so a failover attempt gets its own token
// bound to its own model and body. Model servers check tokens with the public package verify,
// whose Claims this package fills: one definition of the token for both sides.
package entitlement

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/verify"
)

// Type is the token's JWS typ; signing.NewSigner must be built with it.
const Type jose.ContentType = verify.TokenType

// Header is where a provider that opted in receives the token.
const Header = verify.Header

// DefaultTTL is a token's life: long enough for the upstream request to arrive, short enough that
// a leaked token is soon worthless (and the verifier's replay cache stays small).
const DefaultTTL = 60 * time.Second

// Attempt is what one attempt's token binds.
type Attempt struct {
	KeyID      string // the calling API key's id
	Model      string // this attempt's model, "provider/model"
	Provider   string // the catalog provider: the token's audience
	PolicyHash string
	Body       []byte // the exact bytes sent upstream for this attempt
	// Unsent says no one receives the token (its provider did not opt in): its claims are made —
	// its id is the bundle id, the receipt records it and its body hash, and the receipt is
	// signed — but the token itself is not signed, which is most of what minting costs.
	Unsent bool
}

// Token is a minted token.
type Token struct {
	verify.Claims
	Compact string // the JWS, as sent in Header; "" for an Unsent attempt
}

// Minter mints tokens. Signer is required (built with Type); it is safe for concurrent use.
type Minter struct {
	Signer *signing.Signer
	TTL    time.Duration    // default DefaultTTL
	Now    func() time.Time // default time.Now
}

// Mint returns a fresh token for a.
func (m *Minter) Mint(a Attempt) (Token, error) {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	ttl := m.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	t := now()
	sum := sha256.Sum256(a.Body)
	c := verify.Claims{
		ID: NewID(t), IssuedAt: t.Unix(), Expiry: t.Add(ttl).Unix(),
		Subject: a.KeyID, Audience: a.Provider, Model: a.Model, PolicyHash: a.PolicyHash,
		BodySHA256: hex.EncodeToString(sum[:]),
	}
	if a.Unsent {
		return Token{Claims: c}, nil
	}
	compact, err := m.Signer.Sign(Type, c)
	if err != nil {
		return Token{}, fmt.Errorf("entitlement: %w", err)
	}
	return Token{Claims: c, Compact: compact}, nil
}

// NewID returns a token id minted at t: "set_" and 128 bits in hex, the first 48 the time in
// milliseconds and the other 80 random. The serving attempt's id is the response's bundle id and
// names its receipt; ids minted later sort later, so a store keyed by them appends (the embedded
// store's B+tree then fills its pages and touches only its last ones, where random ids would write
// all over the file and hold all of it in memory).
func NewID(t time.Time) string {
	var b [16]byte
	ms := uint64(max(0, t.UnixMilli()))
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never fails (Go 1.24+)
	return "set_" + hex.EncodeToString(b[:])
}
