// Package receipt issues, keeps and serves the signed receipt of each served request: a compact
// JWS (EdDSA, kid from the gateway's JWKS) recording which SMLTP policy applied and its verdict,
// every attempt's entitlement token id with its model, outcome and body hash, and the model that
// served. Anyone can verify a receipt offline against /.well-known/jwks.json with any JOSE library;
// the caller that made the request can fetch it again by its bundle id (the serving attempt's jti,
// GET /receipts/{bundleId}: accountapi.Receipts).
package receipt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/secureai-gateway/gateway/internal/policy"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/verify"
)

// MaxBundleID is the longest bundle id GET /receipts/{bundleId} accepts (SPEC 8).
const MaxBundleID = 128

// Type is the receipt's JWS typ; the signing.Signer must be built with it.
const Type jose.ContentType = verify.ReceiptType

// The policy verdicts a receipt records. A request refused by its policy serves nothing and gets
// no receipt, so these are the only two.
const (
	VerdictAllowed   = "allowed"            // every attempt's model satisfied the policy
	VerdictMonitored = "violation_recorded" // a monitor-mode policy was breached and let through
)

// Policy is the receipt's policy section.
type Policy struct {
	Name    string `json:"name"`
	Hash    string `json:"policy_hash"`
	Mode    string `json:"mode"`
	Verdict string `json:"verdict"`
	// Violations are the monitor-mode breaches, "model: rule"; empty when allowed.
	Violations []string `json:"violations,omitempty"`
}

// Attempt is one attempt of the request, in order.
type Attempt struct {
	JTI        string `json:"jti"` // its entitlement token's id
	Model      string `json:"model"`
	Provider   string `json:"provider,omitempty"` // the deployment's, for a model served by several
	Outcome    string `json:"outcome"`            // "served", or the failover reason (e.g. "rate_limit", "timeout")
	BodySHA256 string `json:"body_sha256"`
}

// Claims is the receipt's payload.
type Claims struct {
	BundleID    string    `json:"bundle_id"` // the serving attempt's jti
	RequestID   string    `json:"request_id"`
	KeyID       string    `json:"sub"` // the API key that made the request
	Policy      Policy    `json:"policy"`
	Attempts    []Attempt `json:"attempts"`
	ServedModel string    `json:"served_model"`
	IssuedAt    int64     `json:"iat"` // Unix seconds
}

// Record is a stored receipt.
type Record struct {
	BundleID  string
	KeyID     string // only this key may fetch it
	JWS       string // "" while the record is a draft (Issuer.Draft): Signed signs it
	CreatedAt time.Time
	ExpiresAt time.Time // the end of retention; an expired record reads as absent
	draft     *draft
}

// draft is what a drafted record's signature is made from: its claims, turned into the JWS
// payload only when it is signed or stored (not on the answer's path), or the payload a store
// kept.
type draft struct {
	signer  *signing.Signer
	claims  *Claims // nil: payload holds them
	payload []byte
}

func (d *draft) json() ([]byte, error) {
	if d.claims == nil {
		return d.payload, nil
	}
	b, err := json.Marshal(d.claims)
	if err != nil {
		return nil, fmt.Errorf("receipt: %w", err)
	}
	return b, nil
}

// Signed returns r with its JWS, signing a draft now. A store returns only signed records, and
// signs a draft off the answer's path: DynamoDB's just before its one transaction, the embedded
// store whenever the receipt is read (it keeps the claims and signs with its own key: Ed25519 is
// deterministic, so each read gives the same JWS while the key is current).
func (r Record) Signed() (Record, error) {
	if r.draft == nil {
		return r, nil
	}
	payload, err := r.draft.json()
	if err != nil {
		return Record{}, err
	}
	jws, err := r.draft.signer.SignPayload(Type, payload)
	if err != nil {
		return Record{}, fmt.Errorf("receipt: %w", err)
	}
	r.JWS, r.draft = jws, nil
	return r, nil
}

// DraftedBy reports whether r is a draft that signer will sign. A store that can sign with
// signer when the receipt is read may keep its claims alone (Payload, then Redraft): the JWS is a
// function of the claims and the key.
func (r Record) DraftedBy(signer *signing.Signer) bool {
	return r.draft != nil && r.draft.signer == signer
}

// Payload returns a draft's claims as its JWS will carry them; an error for a signed record.
func (r Record) Payload() ([]byte, error) {
	if r.draft == nil {
		return nil, errors.New("receipt: a signed record has no claims to keep apart from its JWS")
	}
	return r.draft.json()
}

// Redraft returns r, read from a store that kept its claims without a JWS, as the draft of
// payload that signer signs (Signed).
func (r Record) Redraft(signer *signing.Signer, payload []byte) Record {
	r.JWS, r.draft = "", &draft{signer: signer, payload: payload}
	return r
}

// ErrNotFound is no receipt with that bundle id (or one past its retention).
var ErrNotFound = errors.New("receipt: not found")

// ErrExists is a second receipt for one bundle id.
var ErrExists = errors.New("receipt: a receipt with this bundle id already exists")

// Store keeps receipts: internal/store/boltstore locally, internal/store/dynamostore in the cloud (with a
// retention TTL). Contract: internal/testkit/storetest.RunReceipts.
type Store interface {
	PutReceipt(ctx context.Context, r Record) error // ErrExists when the bundle id is taken
	Receipt(ctx context.Context, bundleID string) (Record, error)
}

// DefaultRetention is how long a receipt is kept: a year, long enough for an audit cycle.
const DefaultRetention = 365 * 24 * time.Hour

// Issuer signs receipts. Signer (built with Type) is required.
type Issuer struct {
	Signer    *signing.Signer
	Retention time.Duration    // default DefaultRetention
	Now       func() time.Time // default time.Now
}

// Sign signs c (setting its time) into the record to store under c.BundleID.
func (i *Issuer) Sign(c Claims) (Record, error) {
	r, err := i.Draft(c)
	if err != nil {
		return Record{}, err
	}
	return r.Signed()
}

// Draft is Sign with the signature left to the store (Record.Signed): the claims are fixed
// now (their slices are kept, not copied: the caller leaves them as they are), their JSON and the
// Ed25519 operation — the largest single cost of a served request — are made off the answer's
// path where the store writes behind. A served request's receipt is stored with its
// settlement, in one write (internal/ledger).
func (i *Issuer) Draft(c Claims) (Record, error) {
	if c.BundleID == "" || len(c.BundleID) > MaxBundleID || c.KeyID == "" {
		return Record{}, fmt.Errorf("receipt: a receipt needs a bundle id (at most %d characters) and a key id", MaxBundleID)
	}
	now := time.Now
	if i.Now != nil {
		now = i.Now
	}
	retention := i.Retention
	if retention <= 0 {
		retention = DefaultRetention
	}
	t := now().UTC()
	c.IssuedAt = t.Unix()
	if c.Attempts == nil {
		c.Attempts = []Attempt{}
	}
	return Record{BundleID: c.BundleID, KeyID: c.KeyID, CreatedAt: t, ExpiresAt: t.Add(retention),
		draft: &draft{signer: i.Signer, claims: &c}}, nil
}

// PolicySection is the receipt's policy section for a request served under a with these
// verdicts (policy.Applied.CheckChain's, plus any re-run per attempt).
func PolicySection(a policy.Applied, verdicts []policy.Verdict) Policy {
	p := Policy{Name: a.Name, Hash: a.Hash, Mode: string(a.Mode), Verdict: VerdictAllowed}
	for _, v := range verdicts {
		if !v.Allowed {
			p.Verdict = VerdictMonitored
			p.Violations = append(p.Violations, v.Model+": "+v.Rule)
		}
	}
	return p
}
