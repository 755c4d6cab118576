// Package audit turns events into audit log entries and defines how the log is queried: one entry
// per event (idempotent on the event id, so a redelivered event writes nothing new), kept for a
// retention period, listed newest first with filters and an opaque cursor. Stores (the embedded
// one, DynamoDB) implement Store.
package audit

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
)

// Retention is how long an entry is kept by default.
const Retention = 365 * 24 * time.Hour

// Severities, in increasing order.
const (
	SeverityInfo     = "info"
	SeverityWarning  = "warning"
	SeverityCritical = "critical"
)

// Entry is one audit log entry.
type Entry struct {
	ID                 string     `json:"id"` // the event id
	Timestamp          time.Time  `json:"timestamp"`
	Type               event.Type `json:"type"`
	Severity           string     `json:"severity"`
	Description        string     `json:"description"`
	User               User       `json:"user"`
	Metadata           Metadata   `json:"metadata"`
	ComplianceCategory string     `json:"complianceCategory"`
	Outcome            string     `json:"outcome"`
}

// User is who the entry is about.
type User struct {
	ID string `json:"id,omitempty"`
}

// Metadata holds the entry's context. Data is the event's data as emitted.
type Metadata struct {
	Endpoint  string `json:"endpoint,omitempty"`
	APIKeyID  string `json:"apiKeyId,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	// Via is "console" for an action taken in the web console (APIKeyID is then its session's),
	// and OperatorKeyID the admin key that opened the session.
	Via           string          `json:"via,omitempty"`
	OperatorKeyID string          `json:"operatorKeyId,omitempty"`
	Data          json.RawMessage `json:"data,omitempty"`
}

// FromEvent returns the entry for e.
func FromEvent(e event.Event) Entry {
	sub := event.SubjectOf(e)
	var common struct {
		Endpoint string          `json:"endpoint"`
		Action   string          `json:"action"`
		Target   event.Target    `json:"target"`
		Failed   string          `json:"failedModel"`
		FailedOn string          `json:"failedProvider"`
		Next     string          `json:"nextModel"`
		NextOn   string          `json:"nextProvider"`
		Reason   string          `json:"reason"`
		Limit    string          `json:"limit"`
		Last     string          `json:"lastModel"`
		LastWhy  string          `json:"lastReason"`
		Status   int             `json:"status"`
		Scope    string          `json:"scope"`
		ScopeID  string          `json:"scopeId"`
		Cause    string          `json:"cause"`
		EP       string          `json:"endpointId"`
		After    json.RawMessage `json:"after"`
		Budget   string          `json:"budget"`
		Percent  int             `json:"threshold"`
	}
	_ = json.Unmarshal(e.Data, &common) // absent fields stay empty
	common.Failed, common.Next = onProvider(common.Failed, common.FailedOn), onProvider(common.Next, common.NextOn)
	en := Entry{ID: e.ID, Timestamp: e.Created.UTC(), Type: e.Type, User: User{ID: sub.UserID},
		Metadata: Metadata{Endpoint: common.Endpoint, APIKeyID: sub.APIKeyID, RequestID: sub.RequestID, Via: sub.Via, OperatorKeyID: sub.OperatorKeyID, Data: e.Data}}

	switch {
	case e.Type == event.ModelFailover && common.Reason == string(chain.HedgeAfter):
		// Nothing failed: the model was slow, and the next one started beside it.
		en.Severity, en.ComplianceCategory, en.Outcome = SeverityInfo, "availability", "hedge"
		en.Description = fmt.Sprintf("Model %s slow to answer; hedging with %s", common.Failed, common.Next)
	case e.Type == event.ModelFailover:
		en.Severity, en.ComplianceCategory, en.Outcome = SeverityWarning, "availability", "failover"
		en.Description = fmt.Sprintf("Model %s failed (%s); failing over to %s", common.Failed, common.Reason, common.Next)
	case e.Type == event.LimitReached:
		en.Severity, en.ComplianceCategory, en.Outcome = SeverityWarning, "access_control", "blocked"
		en.Description = fmt.Sprintf("Limit %s reached", common.Limit)
	case e.Type == event.ChainExhausted:
		en.Severity, en.ComplianceCategory, en.Outcome = SeverityWarning, "availability", "failed"
		en.Description = fmt.Sprintf("Every model of the chain failed (last: %s, %s); answered %d", common.Last, common.LastWhy, common.Status)
	case e.Type == event.WebhookTest:
		en.Severity, en.ComplianceCategory, en.Outcome = SeverityInfo, "operations", "success"
		en.Description = "Test event sent to webhook " + common.EP
	case e.Type == event.WebhookEndpointDisabled:
		en.Severity, en.ComplianceCategory, en.Outcome = SeverityWarning, "operations", "disabled"
		en.Description = fmt.Sprintf("Webhook endpoint %s disabled by the gateway (%s)", common.EP, common.Reason)
	case e.Type == event.BudgetThreshold:
		en.Severity, en.ComplianceCategory, en.Outcome = SeverityWarning, "billing", "threshold"
		en.Description = fmt.Sprintf("User %s reached %d%% of their %s budget", sub.UserID, common.Percent, common.Budget)
	case e.Type == event.CircuitBreakerOpened:
		en.Severity, en.ComplianceCategory, en.Outcome = SeverityCritical, "security", "blocked"
		en.Description = fmt.Sprintf("Circuit breaker opened for %s %s (%s)", common.Scope, common.ScopeID, common.Cause)
	case e.Type == event.CircuitBreakerClosed:
		en.Severity, en.ComplianceCategory, en.Outcome = SeverityInfo, "security", "success"
		en.Description = fmt.Sprintf("Circuit breaker closed for %s %s (%s)", common.Scope, common.ScopeID, common.Cause)
	case e.Type == event.AdminConsoleAction && (common.Action == "sign_in_failed" || common.Action == "sign_in_throttled"):
		var after struct{ Client, Reason string }
		_ = json.Unmarshal(common.After, &after)
		en.Severity, en.ComplianceCategory, en.Outcome = SeverityWarning, "security", "denied"
		en.Description = fmt.Sprintf("Console sign-in refused from %s: %s", after.Client, after.Reason)
		if common.Action == "sign_in_throttled" {
			en.Outcome = "blocked"
			en.Description = fmt.Sprintf("Console sign-ins from %s throttled: %s", after.Client, after.Reason)
		}
	case e.Type.IsAdmin():
		en.Severity, en.ComplianceCategory, en.Outcome = SeverityInfo, "change_management", "success"
		en.Description = fmt.Sprintf("Admin %s of %s %s", common.Action, common.Target.Kind, common.Target.ID)
	default:
		en.Severity, en.ComplianceCategory, en.Outcome = SeverityInfo, "operations", "success"
		en.Description = string(e.Type)
	}
	if sub.Via == event.ViaConsole && sub.OperatorKeyID != "" {
		en.Description += fmt.Sprintf(" (in the web console, by the operator of key %s)", sub.OperatorKeyID)
	}
	return en
}

// sortTimeLayout is fixed-width, so sort keys order as times.
const sortTimeLayout = "20060102T150405.000000000Z"

// SortKey orders entries by time then id; the stores key entries by it and cursors carry it.
func (e *Entry) SortKey() string {
	return e.Timestamp.UTC().Format(sortTimeLayout) + "#" + e.ID
}

// SearchText is what a text search looks in, lower-cased.
func (e *Entry) SearchText() string {
	return strings.ToLower(strings.Join([]string{string(e.Type), e.Description, e.User.ID, e.Metadata.APIKeyID,
		e.Metadata.RequestID, e.Metadata.Endpoint, string(e.Metadata.Data)}, "\n"))
}

// Store keeps the log.
type Store interface {
	// Put stores e unless an entry with its id exists; created reports which.
	Put(ctx context.Context, e Entry, expires time.Time) (created bool, err error)
	// Query returns one page of entries matching q (already normalised), newest first.
	Query(ctx context.Context, q Query) (Page, error)
}

// Page is one page of results; Next is "" on the last page.
type Page struct {
	Entries []Entry `json:"entries"`
	Next    string  `json:"nextCursor,omitempty"`
}

// Query is a search of the log. Start is inclusive, End exclusive.
type Query struct {
	Start, End time.Time
	Type       event.Type
	Severity   string
	UserID     string
	APIKeyID   string
	Search     string // lower-cased by Normalize
	Limit      int
	// After is the sort key of the last entry of the previous page (from DecodeCursor).
	After string
}

// Query limits.
const (
	DefaultWindow = 7 * 24 * time.Hour
	// MaxWindow bounds a query's range; a store may read each day of it.
	MaxWindow    = 366 * 24 * time.Hour
	DefaultLimit = 50
	MaxLimit     = 200
	maxSearchLen = 200
)

// Params is a query as an admin sends it (URL parameters).
type Params struct {
	StartDate, EndDate, Type, Severity, UserID, APIKeyID, Search, Limit, Cursor string
}

// Parse validates p into a Query; dates default to the last DefaultWindow before now.
func Parse(p Params, now time.Time) (Query, error) {
	q := Query{End: now.UTC(), Type: event.Type(p.Type), Severity: p.Severity, UserID: p.UserID,
		APIKeyID: p.APIKeyID, Search: strings.ToLower(strings.TrimSpace(p.Search)), Limit: DefaultLimit}
	var err error
	if p.EndDate != "" {
		if q.End, err = parseDate("endDate", p.EndDate, true, now); err != nil {
			return Query{}, err
		}
	}
	q.Start = q.End.Add(-DefaultWindow)
	if p.StartDate != "" {
		if q.Start, err = parseDate("startDate", p.StartDate, false, now); err != nil {
			return Query{}, err
		}
	}
	switch {
	case !q.Start.Before(q.End):
		return Query{}, fault.Invalid("startDate", "startDate must be before endDate")
	case q.End.Sub(q.Start) > MaxWindow:
		return Query{}, fault.Invalid("startDate", "the date range is longer than 366 days")
	case q.Type != "" && !event.Known(q.Type):
		return Query{}, fault.Invalid("type", fmt.Sprintf("type %q is not in the event catalog", p.Type))
	case q.Severity != "" && q.Severity != SeverityInfo && q.Severity != SeverityWarning && q.Severity != SeverityCritical:
		return Query{}, fault.Invalid("severity", "severity must be info, warning or critical")
	case len(q.Search) > maxSearchLen:
		return Query{}, fault.Invalid("search", fmt.Sprintf("search is longer than %d characters", maxSearchLen))
	}
	if p.Limit != "" {
		n, err := fmt.Sscan(p.Limit, &q.Limit)
		if err != nil || n != 1 || q.Limit < 1 || q.Limit > MaxLimit || fmt.Sprint(q.Limit) != p.Limit {
			return Query{}, fault.Invalid("limit", fmt.Sprintf("limit must be an integer from 1 to %d", MaxLimit))
		}
	}
	if p.Cursor != "" {
		if q.After, err = decodeCursor(p.Cursor); err != nil {
			return Query{}, err
		}
	}
	return q, nil
}

// The dates an audit query may name: no entry is older than the project, and none is kept past
// its retention, so a date outside is a mistake (a year 9999 end made an empty 200).
var earliestDate = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// parseDate accepts RFC 3339 or a date (YYYY-MM-DD); a date as an end means the end of that day.
// A date before 2000 or more than a retention past now is refused, naming param.
func parseDate(param, s string, end bool, now time.Time) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		if t, err = time.Parse(time.DateOnly, s); err != nil {
			return time.Time{}, fault.Invalid(param, fmt.Sprintf("%s %q is not a date (YYYY-MM-DD) or an RFC 3339 time", param, s))
		}
		if end {
			t = t.Add(24 * time.Hour)
		}
	}
	t = t.UTC()
	if latest := now.Add(Retention); t.Before(earliestDate) || t.After(latest) {
		return time.Time{}, fault.Invalid(param, fmt.Sprintf("%s %q is out of range: from %s to %s", param, s,
			earliestDate.Format(time.DateOnly), latest.Format(time.DateOnly)))
	}
	return t, nil
}

// Matches reports whether e passes q's filters other than the date range and cursor.
func (q *Query) Matches(e *Entry) bool {
	return (q.Type == "" || e.Type == q.Type) &&
		(q.Severity == "" || e.Severity == q.Severity) &&
		(q.UserID == "" || e.User.ID == q.UserID) &&
		(q.APIKeyID == "" || e.Metadata.APIKeyID == q.APIKeyID) &&
		(q.Search == "" || strings.Contains(e.SearchText(), q.Search))
}

// Bounds returns the sort keys a page scans between, newest first: entries with keys below hi
// (exclusive) down to lo (inclusive).
func (q *Query) Bounds() (lo, hi string) {
	lo = q.Start.UTC().Format(sortTimeLayout)
	hi = q.End.UTC().Format(sortTimeLayout)
	if q.After != "" && q.After < hi {
		hi = q.After
	}
	return lo, hi
}

// Cursor returns the opaque cursor that continues after e.
func Cursor(e *Entry) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1:" + e.SortKey()))
}

func decodeCursor(c string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	key, ok := strings.CutPrefix(string(raw), "v1:")
	at, _, found := strings.Cut(key, "#")
	if err != nil || !ok || !found {
		return "", fault.Invalid("cursor", "cursor is not one this API returned")
	}
	if _, err := time.Parse(sortTimeLayout, at); err != nil {
		return "", fault.Invalid("cursor", "cursor is not one this API returned")
	}
	return key, nil
}

// onProvider names a model's deployment when the event names one: "model on provider".
func onProvider(model, provider string) string {
	if provider == "" {
		return model
	}
	return model + " on " + provider
}
