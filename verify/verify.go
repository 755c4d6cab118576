// Package verify lets a model server check that a request comes from a SecureAI gateway and is the
// exact call the gateway authorised. For every attempt the gateway mints a Signed Entitlement
// Token — a compact JWS (EdDSA / Ed25519) — and, for providers that opt in, sends it in the
// X-SecureAI-Entitlement header. A Verifier checks the token's signature against the gateway's
// JWKS (GET /.well-known/jwks.json), its expiry, that it was minted for this server (aud) and this
// model, that body_sha256 is the SHA-256 of the bytes actually received, and that its jti was
// never seen before (single use, through a ReplayCache).
//
// The package is importable from outside the gateway's module and depends only on go-jose.
package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Header is the request header that carries the token.
const Header = "X-SecureAI-Entitlement"

// TokenType is the token's JWS "typ": receipts, signed by the same keys, carry another, so one
// can never be presented as the other.
const TokenType = "secureai-entitlement+jwt"

// Claims are the token's claims.
type Claims struct {
	ID         string `json:"jti"` // unique per attempt; the serving attempt's is the response's bundle id
	IssuedAt   int64  `json:"iat"` // Unix seconds
	Expiry     int64  `json:"exp"` // Unix seconds
	Subject    string `json:"sub"` // the gateway API key id that made the request
	Audience   string `json:"aud"` // the provider name in the gateway's catalog
	Model      string `json:"model"`
	PolicyHash string `json:"policy_hash"` // SHA-256 of the SMLTP policy's canonical form
	BodySHA256 string `json:"body_sha256"` // hex SHA-256 of the exact request body sent
}

// Reason is why a token was refused.
type Reason string

const (
	Malformed     Reason = "malformed"      // not a compact EdDSA JWS of the right type
	UnknownKey    Reason = "unknown_key"    // its kid is not in the JWKS
	BadSignature  Reason = "bad_signature"  // the signature does not verify
	Expired       Reason = "expired"        // exp has passed (or iat is in the future)
	WrongAudience Reason = "wrong_audience" // minted for another provider
	WrongModel    Reason = "wrong_model"    // minted for another model
	BodyMismatch  Reason = "body_mismatch"  // the body is not the one the gateway sent
	Replayed      Reason = "replayed"       // its jti was already used
)

// Error is a refused token or receipt. Check the reason with errors.As.
type Error struct {
	Reason Reason
	Detail string
	Err    error // the underlying cause, if any

	what string // what was refused, for the message: "" is an entitlement token
}

func (e *Error) Error() string {
	what := e.what
	if what == "" {
		what = "entitlement token"
	}
	if e.Err != nil {
		return fmt.Sprintf("verify: %s refused (%s): %s: %v", what, e.Reason, e.Detail, e.Err)
	}
	return fmt.Sprintf("verify: %s refused (%s): %s", what, e.Reason, e.Detail)
}

func (e *Error) Unwrap() error { return e.Err }

func refuse(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// Verifier checks tokens. Keys, Audience and Replay are required; it is safe for concurrent use.
type Verifier struct {
	Keys     Keys        // the gateway's public keys: NewRemoteJWKS or StaticJWKS
	Audience string      // this server's provider name in the gateway's catalog
	Replay   ReplayCache // remembers used jtis: NewMemoryReplayCache, or a shared one for a fleet
	// Leeway tolerates clock skew between gateway and server; default 5 s.
	Leeway time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Verify checks token for a request to model with body (the exact bytes received) and returns its
// claims. The jti is spent only when every other check passed, so a refused token cannot burn a
// valid one's jti.
func (v *Verifier) Verify(ctx context.Context, token, model string, body []byte) (*Claims, error) {
	if v.Keys == nil || v.Replay == nil || v.Audience == "" {
		return nil, errors.New("verify: Verifier needs Keys, Audience and Replay")
	}
	payload, err := verifySigned(ctx, v.Keys, token, TokenType)
	if err != nil {
		return nil, err
	}
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil || c.ID == "" || c.Expiry == 0 {
		return nil, &Error{Reason: Malformed, Detail: "claims are not a JSON object with jti and exp", Err: err}
	}
	now := v.now()
	leeway := v.Leeway
	if leeway == 0 {
		leeway = 5 * time.Second
	}
	switch exp := time.Unix(c.Expiry, 0); {
	case now.After(exp.Add(leeway)):
		return nil, refuse(Expired, "expired at %s", exp.UTC().Format(time.RFC3339))
	case time.Unix(c.IssuedAt, 0).After(now.Add(leeway)):
		return nil, refuse(Expired, "issued in the future (iat %d)", c.IssuedAt)
	}
	if c.Audience != v.Audience {
		return nil, refuse(WrongAudience, "minted for %q, this server is %q", c.Audience, v.Audience)
	}
	if c.Model != model {
		return nil, refuse(WrongModel, "minted for model %q, the request is for %q", c.Model, model)
	}
	sum := sha256.Sum256(body)
	if got := hex.EncodeToString(sum[:]); subtle.ConstantTimeCompare([]byte(got), []byte(c.BodySHA256)) != 1 {
		return nil, refuse(BodyMismatch, "body SHA-256 is %s, the token binds %s", got, c.BodySHA256)
	}
	fresh, err := v.Replay.Use(ctx, c.ID, time.Unix(c.Expiry, 0).Add(leeway))
	if err != nil {
		return nil, fmt.Errorf("verify: replay cache: %w", err)
	}
	if !fresh {
		return nil, refuse(Replayed, "jti %s was already used", c.ID)
	}
	return &c, nil
}

// MaxBody bounds the body VerifyRequest reads.
const MaxBody = 32 << 20

// VerifyRequest reads r's body (up to MaxBody), verifies the token in its Header for model, and
// puts the body back on r so the handler can decode it as usual.
func (v *Verifier) VerifyRequest(r *http.Request, model string) (*Claims, []byte, error) {
	tok := r.Header.Get(Header)
	if tok == "" {
		return nil, nil, refuse(Malformed, "no %s header", Header)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return nil, nil, fmt.Errorf("verify: reading the body: %w", err)
	}
	if len(body) > MaxBody {
		return nil, nil, fmt.Errorf("verify: body over %d bytes", MaxBody)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c, err := v.Verify(r.Context(), tok, model, body)
	return c, body, err
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}
