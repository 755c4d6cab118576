// Package webhook delivers events to subscribers' HTTPS endpoints, signed so a receiver can prove
// the gateway sent them: endpoint records and their validation, the signatures (the gateway's own
// X-SecureAI-Signature and Standard Webhooks), an HTTP client that refuses private addresses at
// dial time, and the dispatcher that fans an event out into one delivery per endpoint and retries
// each on its own schedule. Queues and stores are interfaces: SQS and DynamoDB in the cloud, the
// embedded store locally.
package webhook

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/printable"
)

// AllEvents subscribes an endpoint to every event type, present and future.
const AllEvents = "*"

// DisableAfter is how many consecutive failed deliveries disable an endpoint.
const DisableAfter = 20

// Why the gateway disabled an endpoint (Endpoint.DisabledReason).
const (
	DisabledFailures = "consecutive_failures" // DisableAfter failed deliveries in a row
	DisabledGone     = "gone"                 // the receiver answered 410 Gone: it asks to stop, at once
)

// Endpoint is a subscriber. Secret is the signing secret; it leaves the gateway only in the
// responses to create and rotate-secret (see Public).
type Endpoint struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Description string   `json:"description"`
	Events      []string `json:"events"`
	Enabled     bool     `json:"enabled"`
	Secret      string   `json:"secret,omitempty"`
	// PreviousSecret is the secret a rotation replaced; deliveries are signed with it too until
	// PreviousSecretUntil, so receivers can switch without losing one.
	PreviousSecret      string    `json:"previousSecret,omitempty"`
	PreviousSecretUntil time.Time `json:"previousSecretUntil,omitzero"`
	ConsecutiveFailures int       `json:"consecutiveFailures"`
	// DisabledReason says why the gateway disabled the endpoint itself ("" when an admin did, or
	// it is enabled): DisabledFailures or DisabledGone, since DisabledAt.
	DisabledReason string    `json:"disabledReason,omitempty"`
	DisabledAt     time.Time `json:"disabledAt,omitzero"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

// Audited is the endpoint as events and the audit log record it: Public, with its URL cut to
// scheme and host — a path or query often is a credential (Slack- and Zapier-style URLs) and every
// "*" subscriber and audit reader would see it — and URLFingerprint telling one URL from another.
type Audited struct {
	Endpoint
	URLFingerprint string `json:"urlFingerprint"`
}

// Audited returns the endpoint as events record it.
func (e Endpoint) Audited() Audited {
	a := Audited{Endpoint: e.Public()}
	sum := sha256.Sum256([]byte(e.URL))
	a.URLFingerprint = "sha256:" + hex.EncodeToString(sum[:8])
	if u, err := url.Parse(e.URL); err == nil && u.Host != "" {
		a.URL = u.Scheme + "://" + u.Host
	} else {
		a.URL = ""
	}
	return a
}

// Public returns the endpoint without its secret.
func (e Endpoint) Public() Endpoint {
	e.Secret, e.PreviousSecret = "", ""
	e.Events = slices.Clone(e.Events)
	return e
}

// Wants reports whether the endpoint is enabled and subscribed to t.
func (e *Endpoint) Wants(t event.Type) bool {
	return e.Enabled && (slices.Contains(e.Events, AllEvents) || slices.Contains(e.Events, string(t)))
}

// ErrNotFound is returned for an unknown endpoint id.
var ErrNotFound = fault.New(fault.NotFound, "Not found", "webhook endpoint not found").WithCode("webhook_not_found")

// NewID returns a fresh endpoint id.
func NewID() string { return "wh_" + randomToken(12) }

// NewSecret returns a fresh signing secret: "whsec_" and the base64 of 32 random bytes, the
// Standard Webhooks form (its verifiers base64-decode the part after the prefix).
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return "whsec_" + base64.StdEncoding.EncodeToString(b[:])
}

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Input is what an admin sends to create or change an endpoint; nil fields are left as they are
// (on create: Enabled defaults to true, Events to none → refused).
type Input struct {
	URL         *string   `json:"url"`
	Description *string   `json:"description"`
	Events      *[]string `json:"events"`
	Enabled     *bool     `json:"enabled"`
}

// URLChecker refuses a URL the gateway must not deliver to (see Guard.CheckURL).
type URLChecker interface {
	CheckURL(ctx context.Context, raw string) error
}

// limits on what an admin may store, so a record stays small.
const (
	maxURLLen         = 2048
	maxDescriptionLen = 500
)

// Create validates in and returns the new endpoint with a fresh id and secret.
func Create(ctx context.Context, in Input, check URLChecker, now time.Time) (*Endpoint, error) {
	if in.URL == nil {
		return nil, fault.Invalid("url", "url is required")
	}
	if in.Events == nil {
		return nil, fault.Invalid("events", `events is required: "*" or names from the event catalog`)
	}
	if err := in.CheckURL(ctx, check); err != nil {
		return nil, err
	}
	e := &Endpoint{ID: NewID(), Enabled: true, Secret: NewSecret(), CreatedAt: now.UTC(), UpdatedAt: now.UTC()}
	if err := e.Apply(in, now); err != nil {
		return nil, err
	}
	return e, nil
}

// CheckURL checks where in's URL, if any, points. It resolves the host, so callers run it before
// an update's transaction, not inside it.
func (in Input) CheckURL(ctx context.Context, check URLChecker) error {
	if in.URL == nil {
		return nil
	}
	if err := check.CheckURL(ctx, strings.TrimSpace(*in.URL)); err != nil {
		return fault.Invalid("url", err.Error()).WithCode("invalid_webhook_url").Wrap(err)
	}
	return nil
}

// Apply validates in's form and applies it to e; where a new URL points is in.CheckURL's to say.
// Re-enabling an endpoint resets its failure count.
func (e *Endpoint) Apply(in Input, now time.Time) error {
	if in.URL != nil {
		u := strings.TrimSpace(*in.URL)
		if len(u) > maxURLLen {
			return fault.Invalid("url", fmt.Sprintf("url is longer than %d characters", maxURLLen))
		}
		if _, err := parseURL(u); err != nil {
			return fault.Invalid("url", err.Error()).WithCode("invalid_webhook_url").Wrap(err)
		}
		e.URL = u
	}
	if in.Description != nil {
		if len(*in.Description) > maxDescriptionLen {
			return fault.Invalid("description", fmt.Sprintf("description is longer than %d characters", maxDescriptionLen))
		}
		if !printable.Text(*in.Description) {
			return fault.Invalid("description", "description must be printable text: no control characters, NUL or bidirectional formatting characters")
		}
		e.Description = *in.Description
	}
	if in.Events != nil {
		evs, err := validEvents(*in.Events)
		if err != nil {
			return err
		}
		e.Events = evs
	}
	if in.Enabled != nil {
		if *in.Enabled && !e.Enabled {
			e.ConsecutiveFailures, e.DisabledReason, e.DisabledAt = 0, "", time.Time{}
		}
		e.Enabled = *in.Enabled
	}
	e.UpdatedAt = now.UTC()
	return nil
}

func validEvents(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, fault.Invalid("events", `events is empty: give "*" or names from the event catalog`)
	}
	var unknown []string
	out := make([]string, 0, len(names))
	for _, n := range names {
		if n != AllEvents && !event.Known(event.Type(n)) {
			unknown = append(unknown, fmt.Sprintf("%q", n))
			continue
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(unknown) > 0 {
		return nil, fault.Invalid("events", "unknown event names "+strings.Join(unknown, ", ")+
			`: give "*" or names from the event catalog`).WithCode("unknown_event")
	}
	return out, nil
}

// ErrURL is a delivery URL refused for what it is (scheme, host) or where it points.
type ErrURL struct {
	URL    string
	Reason string
	Err    error
}

func (e *ErrURL) Error() string { return fmt.Sprintf("webhook url %q refused: %s", e.URL, e.Reason) }
func (e *ErrURL) Unwrap() error { return e.Err }

// parseURL checks the URL's form: absolute http(s), a host, no credentials in it.
func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &ErrURL{URL: raw, Reason: "not a URL", Err: err}
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, &ErrURL{URL: raw, Reason: "only http and https URLs are allowed"}
	case u.Hostname() == "":
		return nil, &ErrURL{URL: raw, Reason: "no host"}
	case u.User != nil:
		return nil, &ErrURL{URL: raw, Reason: "credentials in the URL are not allowed"}
	}
	return u, nil
}

// DefaultRotationOverlap is how long a rotated-out secret keeps signing deliveries, as Stripe and
// Svix do: a day to deploy the new one.
const DefaultRotationOverlap = 24 * time.Hour

// MaxRotationOverlap bounds a rotation's overlap.
const MaxRotationOverlap = 7 * 24 * time.Hour

// Rotate gives the endpoint a new secret; the old one keeps signing deliveries beside it for
// overlap (0: it stops at once).
func (e *Endpoint) Rotate(overlap time.Duration, now time.Time) {
	e.PreviousSecret, e.PreviousSecretUntil = "", time.Time{}
	if overlap > 0 {
		e.PreviousSecret, e.PreviousSecretUntil = e.Secret, now.Add(overlap).UTC()
	}
	e.Secret = NewSecret()
	e.UpdatedAt = now.UTC()
}

// SigningSecrets are the secrets a delivery at now is signed with: the current one, and the
// rotated-out one while its overlap lasts.
func (e *Endpoint) SigningSecrets(now time.Time) []string {
	if e.PreviousSecret != "" && now.Before(e.PreviousSecretUntil) {
		return []string{e.Secret, e.PreviousSecret}
	}
	return []string{e.Secret}
}
