// Package event is the gateway's event envelope and catalog: what happened (a failover, a limit
// reached, an admin change, a breaker opening), in one stable, versioned shape that EventBridge
// subscribers, webhook receivers and the audit log all read. It knows nothing of where events go;
// a Publisher carries them there.
package event

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
)

// Version is the envelope and data version. Adding an optional field keeps it; removing or
// renaming one, or changing a field's meaning, bumps it.
const Version = "1"

// Type names what happened, e.g. "api:model_failover".
type Type string

// The catalog. Webhook endpoints subscribe to these names (or "*"); EventBridge rules match them
// as detail-type.
const (
	ModelFailover           Type = "api:model_failover"
	LimitReached            Type = "api:limit_reached"
	ChainExhausted          Type = "api:chain_exhausted"
	WebhookTest             Type = "webhook:test"
	WebhookEndpointDisabled Type = "webhook:endpoint_disabled"

	AdminAPIKeyCreated        Type = "admin:api_key_created"
	AdminAPIKeyUpdated        Type = "admin:api_key_updated"
	AdminAPIKeyRevoked        Type = "admin:api_key_revoked"
	AdminWebhookCreated       Type = "admin:webhook_created"
	AdminWebhookUpdated       Type = "admin:webhook_updated"
	AdminWebhookDeleted       Type = "admin:webhook_deleted"
	AdminWebhookSecretRotated Type = "admin:webhook_secret_rotated"
	AdminUserUpdated          Type = "admin:user_updated"
	// AdminConsoleAction is one action taken in the web console (signing in or out, or a change
	// sent through it), so the audit log tells console actions from API calls.
	AdminConsoleAction Type = "admin:console_action"

	CircuitBreakerOpened Type = "circuit_breaker:opened"
	CircuitBreakerClosed Type = "circuit_breaker:closed"

	// BudgetThreshold is a user's spend in the period first reaching one of their budget
	// thresholds: once per threshold, budget and period.
	BudgetThreshold Type = "billing:budget_threshold"
)

// Catalog lists every event type, in a stable order.
func Catalog() []Type {
	return []Type{ModelFailover, LimitReached, ChainExhausted, WebhookTest, WebhookEndpointDisabled,
		AdminAPIKeyCreated, AdminAPIKeyUpdated, AdminAPIKeyRevoked,
		AdminWebhookCreated, AdminWebhookUpdated, AdminWebhookDeleted, AdminWebhookSecretRotated,
		AdminUserUpdated, AdminConsoleAction, CircuitBreakerOpened, CircuitBreakerClosed, BudgetThreshold}
}

// Known reports whether t is in the catalog.
func Known(t Type) bool { return slices.Contains(Catalog(), t) }

// IsAdmin reports whether t records an administrator's change.
func (t Type) IsAdmin() bool { return strings.HasPrefix(string(t), "admin:") }

// Event is the envelope: the body of a webhook delivery and the detail of an EventBridge event.
type Event struct {
	ID      string          `json:"id"` // "evt_" + 32 hex digits; unique, stable across redeliveries
	Type    Type            `json:"type"`
	Version string          `json:"version"`
	Created time.Time       `json:"created"` // RFC 3339, UTC
	Data    json.RawMessage `json:"data"`
}

// NewID returns a fresh event id.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return "evt_" + hex.EncodeToString(b[:])
}

// New wraps data (marshalled to JSON) in an envelope of type t created at now.
func New(t Type, data any, now time.Time) (Event, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("event: encoding %s data: %w", t, err)
	}
	return Event{ID: NewID(), Type: t, Version: Version, Created: now.UTC(), Data: raw}, nil
}

// of builds an event from data whose JSON encoding cannot fail (strings, numbers, times, lists
// of strings).
func of(t Type, data any, now time.Time) Event {
	e, _ := New(t, data, now) // plain structs of scalars always encode
	return e
}

// orNow is t in UTC, or now when t is unset.
func orNow(t, now time.Time) time.Time {
	if t.IsZero() {
		t = now
	}
	return t.UTC()
}

// Subject is who an event is about; every data shape carries it so consumers (the audit log)
// read it without knowing the type.
type Subject struct {
	UserID    string `json:"userId,omitempty"`
	APIKeyID  string `json:"apiKeyId,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	// Via is "console" for an action taken in the web console, whose APIKeyID is then the
	// console session's; OperatorKeyID is the admin key that opened that session.
	Via           string `json:"via,omitempty"`
	OperatorKeyID string `json:"operatorKeyId,omitempty"`
}

// ViaConsole is Subject.Via for an action taken in the web console.
const ViaConsole = "console"

// Failover is the data of api:model_failover: one transition, failedModel failed and nextModel
// is tried next. The providers name the deployments, for models served by several (absent
// otherwise; a failover between two deployments of one model names the model twice).
type Failover struct {
	FailedModel    string `json:"failedModel"`
	FailedProvider string `json:"failedProvider,omitempty"`
	Reason         string `json:"reason"` // the chain's classification: a chain.Reason such as "rate_limit"
	NextModel      string `json:"nextModel"`
	NextProvider   string `json:"nextProvider,omitempty"`
	LatencyMs      int64  `json:"latencyMs"` // how long the failed attempt took
	// Endpoint is the route the request came through, e.g. "/v1/messages".
	Endpoint string `json:"endpoint,omitempty"`
	Subject
	Time time.Time `json:"time"` // when the attempt failed
}

// ModelFailoverEvent returns the api:model_failover event for f.
func ModelFailoverEvent(f Failover, now time.Time) Event {
	f.Time = orNow(f.Time, now)
	return of(ModelFailover, f, now)
}

// Limit is the data of api:limit_reached.
type Limit struct {
	Limit string `json:"limit"` // "requests_per_minute", "requests_per_hour", "daily", "monthly", "points", "budget"
	// Max is the configured limit, when it is a count.
	Max       int64     `json:"max,omitempty"`
	ResetTime time.Time `json:"resetTime,omitzero"`
	Endpoint  string    `json:"endpoint,omitempty"` // the route that was refused, e.g. "/v1/chat/completions"
	// Refusals is how many refused requests this event stands for: itself and those of the same
	// key and limit that emitted none since the last event (one per window is emitted).
	Refusals int64 `json:"refusals,omitempty"`
	Subject
	Time time.Time `json:"time"`
}

// LimitReachedEvent returns the api:limit_reached event for l.
func LimitReachedEvent(l Limit, now time.Time) Event {
	l.Time = orNow(l.Time, now)
	l.ResetTime = l.ResetTime.UTC()
	return of(LimitReached, l, now)
}

// Exhausted is the data of api:chain_exhausted: every attempt of a request's chain failed for a
// failover reason and no model was left to try, so the caller got a 429 or a 502.
type Exhausted struct {
	// Models are the models attempted, in order, each once (retries and hedges are attempts,
	// counted in Attempts).
	Models    []string `json:"models"`
	Attempts  int      `json:"attempts"`
	LastModel string   `json:"lastModel"`
	// LastProvider names the last failed attempt's deployment, for a model served by several.
	LastProvider string `json:"lastProvider,omitempty"`
	LastReason   string `json:"lastReason"` // the last failure's classification, a chain.Reason
	Status       int    `json:"status"`     // 429 when every failure was a rate limit, else 502
	Endpoint     string `json:"endpoint,omitempty"`
	Subject
	Time time.Time `json:"time"`
}

// ChainExhaustedEvent returns the api:chain_exhausted event for x.
func ChainExhaustedEvent(x Exhausted, now time.Time) Event {
	x.Time = orNow(x.Time, now)
	return of(ChainExhausted, x, now)
}

// Test is the data of webhook:test.
type Test struct {
	EndpointID string `json:"endpointId"`
	Message    string `json:"message"`
	Subject
}

// WebhookTestEvent returns the webhook:test event sent to one endpoint.
func WebhookTestEvent(endpointID string, by Subject, now time.Time) Event {
	return of(WebhookTest, Test{EndpointID: endpointID, Message: "Test event from SecureAI Gateway", Subject: by}, now)
}

// EndpointDisabled is the data of webhook:endpoint_disabled: the gateway disabled an endpoint
// itself. URL is its scheme and host only (a path or query may be a credential), URLFingerprint
// tells one URL from another.
type EndpointDisabled struct {
	EndpointID          string `json:"endpointId"`
	URL                 string `json:"url"`
	URLFingerprint      string `json:"urlFingerprint"`
	Reason              string `json:"reason"` // "gone" (a 410) or "consecutive_failures"
	ConsecutiveFailures int    `json:"consecutiveFailures"`
	Subject
	Time time.Time `json:"time"`
}

// EndpointDisabledEvent returns the webhook:endpoint_disabled event for d.
func EndpointDisabledEvent(d EndpointDisabled, now time.Time) Event {
	d.Time = orNow(d.Time, now)
	return of(WebhookEndpointDisabled, d, now)
}

// Admin is the data of admin:* events: who changed what, and the record before and after. Before
// and After are public views: they never hold a secret (a key's hash, a webhook's whsec_).
type Admin struct {
	Action string          `json:"action"` // "create", "update", "delete", "revoke", "rotate_secret"
	Target Target          `json:"target"`
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
	Subject
	Time time.Time `json:"time"`
}

// Target names the record an admin action changed.
type Target struct {
	Kind string `json:"kind"` // "api_key", "webhook", "user"
	ID   string `json:"id"`
}

// AdminEvent returns the admin event of type t; before and after are encoded as JSON (nil for
// none). t must be an admin:* type of the catalog.
func AdminEvent(t Type, a Admin, before, after any, now time.Time) (Event, error) {
	if !t.IsAdmin() || !Known(t) {
		return Event{}, fault.Invalid("type", fmt.Sprintf("event: %q is not an admin event type of the catalog", t))
	}
	var err error
	if a.Before, err = optionalJSON(before); err != nil {
		return Event{}, fmt.Errorf("event: encoding before of %s: %w", t, err)
	}
	if a.After, err = optionalJSON(after); err != nil {
		return Event{}, fmt.Errorf("event: encoding after of %s: %w", t, err)
	}
	a.Time = orNow(a.Time, now)
	return New(t, a, now)
}

func optionalJSON(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	return json.Marshal(v)
}

// Breaker is the data of circuit_breaker:opened and circuit_breaker:closed.
type Breaker struct {
	Scope   string `json:"scope"` // "key" or "user"
	ScopeID string `json:"scopeId"`
	// Cause is why it changed: "admin" or an automatic trigger such as "policy_violations".
	Cause string    `json:"cause"`
	Until time.Time `json:"until,omitzero"` // when an opened breaker closes by itself
	Subject
	Time time.Time `json:"time"`
}

// BreakerEvent returns circuit_breaker:opened (open true) or circuit_breaker:closed.
func BreakerEvent(open bool, b Breaker, now time.Time) Event {
	t := CircuitBreakerClosed
	if open {
		t = CircuitBreakerOpened
	}
	b.Time = orNow(b.Time, now)
	b.Until = b.Until.UTC()
	return of(t, b, now)
}

// Threshold is the data of billing:budget_threshold: the settlement of a request took the user's
// count in the period (points used, or usage-by-model spend) to Threshold percent of its limit
// for the first time. Spend counts requests settled and those in flight, as the limits do.
type Threshold struct {
	Budget    string `json:"budget"`    // "points" (the monthly allowance) or "dollars" (the usage-by-model budget)
	Threshold int    `json:"threshold"` // percent of Limit
	// Limit and Spend are in points, or for "dollars" in micro-dollars (LimitDollars and
	// SpendDollars give them in dollars).
	Limit        int64     `json:"limit"`
	Spend        int64     `json:"spend"`
	LimitDollars float64   `json:"limitDollars,omitempty"`
	SpendDollars float64   `json:"spendDollars,omitempty"`
	PeriodStart  time.Time `json:"periodStart"`
	PeriodEnd    time.Time `json:"periodEnd"` // the next renewal
	Subject
	Time time.Time `json:"time"`
}

// BudgetThresholdEvent returns the billing:budget_threshold event for th.
func BudgetThresholdEvent(th Threshold, now time.Time) Event {
	th.Time = orNow(th.Time, now)
	th.PeriodStart, th.PeriodEnd = th.PeriodStart.UTC(), th.PeriodEnd.UTC()
	return of(BudgetThreshold, th, now)
}

// SubjectOf reads the Subject every data shape carries.
func SubjectOf(e Event) Subject {
	var s Subject
	_ = json.Unmarshal(e.Data, &s) // data without a subject leaves it empty
	return s
}

// Validate checks an envelope that arrived from outside (a queue message): the fields consumers
// rely on are present and the type is known.
func (e Event) Validate() error {
	switch {
	case !strings.HasPrefix(e.ID, "evt_"):
		return fault.Invalid("id", fmt.Sprintf("event id %q does not start with evt_", e.ID))
	case !Known(e.Type):
		return fault.Invalid("type", fmt.Sprintf("event type %q is not in the catalog", e.Type))
	case e.Created.IsZero():
		return fault.Invalid("created", "event has no created time")
	case len(e.Data) == 0 || e.Data[0] != '{':
		return fault.Invalid("data", "event data is not a JSON object")
	}
	return nil
}
