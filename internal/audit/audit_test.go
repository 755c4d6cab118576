package audit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestEntryFromEachKindOfEvent(t *testing.T) {
	sub := event.Subject{UserID: "u1", APIKeyID: "k1", RequestID: "r1"}
	admin, err := event.AdminEvent(event.AdminWebhookDeleted, event.Admin{Action: "delete", Target: event.Target{Kind: "webhook", ID: "wh_1"}, Subject: sub}, nil, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	// Issue 34 item 5: a refused console sign-in is a security warning naming the client address.
	refused, err := event.AdminEvent(event.AdminConsoleAction, event.Admin{Action: "sign_in_failed", Target: event.Target{Kind: "console_session", ID: "k1"}, Subject: sub},
		nil, map[string]any{"client": "198.51.100.7", "reason": "unknown API key"}, now)
	if err != nil {
		t.Fatal(err)
	}
	throttled, err := event.AdminEvent(event.AdminConsoleAction, event.Admin{Action: "sign_in_throttled", Target: event.Target{Kind: "console_session"}, Subject: sub},
		nil, map[string]any{"client": "198.51.100.7", "reason": "too many failed sign-ins"}, now)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		ev                                      event.Event
		severity, category, outcome, descriptor string
	}{
		{event.ModelFailoverEvent(event.Failover{FailedModel: "openai/a", Reason: "timeout", NextModel: "google/b", Subject: sub}, now),
			"warning", "availability", "failover", "Model openai/a failed (timeout); failing over to google/b"},
		{event.LimitReachedEvent(event.Limit{Limit: "daily", Endpoint: "/chat/completions", Subject: sub}, now), "warning", "access_control", "blocked", "Limit daily reached"},
		{event.ChainExhaustedEvent(event.Exhausted{Models: []string{"a/x", "b/y"}, Attempts: 2, LastModel: "b/y", LastReason: "timeout", Status: 502, Subject: sub}, now),
			"warning", "availability", "failed", "Every model of the chain failed (last: b/y, timeout); answered 502"},
		{event.WebhookTestEvent("wh_1", sub, now), "info", "operations", "success", "Test event sent to webhook wh_1"},
		{event.BudgetThresholdEvent(event.Threshold{Budget: "points", Threshold: 80, Limit: 100, Spend: 80, Subject: sub}, now),
			"warning", "billing", "threshold", "User " + sub.UserID + " reached 80% of their points budget"},
		{event.BreakerEvent(true, event.Breaker{Scope: "key", ScopeID: "k1", Cause: "admin", Subject: sub}, now), "critical", "security", "blocked", "Circuit breaker opened for key k1 (admin)"},
		{event.BreakerEvent(false, event.Breaker{Scope: "key", ScopeID: "k1", Cause: "admin", Subject: sub}, now), "info", "security", "success", "Circuit breaker closed for key k1 (admin)"},
		{admin, "info", "change_management", "success", "Admin delete of webhook wh_1"},
		{refused, "warning", "security", "denied", "Console sign-in refused from 198.51.100.7: unknown API key"},
		{throttled, "warning", "security", "blocked", "Console sign-ins from 198.51.100.7 throttled: too many failed sign-ins"},
		{event.ModelFailoverEvent(event.Failover{FailedModel: "openai/a", Reason: "hedge_after", NextModel: "google/b", Subject: sub}, now),
			"info", "availability", "hedge", "Model openai/a slow to answer; hedging with google/b"},
		{event.ModelFailoverEvent(event.Failover{FailedModel: "anthropic/c", FailedProvider: "anthropic", Reason: "server_error",
			NextModel: "anthropic/c", NextProvider: "bedrock", Subject: sub}, now),
			"warning", "availability", "failover", "Model anthropic/c on anthropic failed (server_error); failing over to anthropic/c on bedrock"},
	}
	for _, c := range cases {
		t.Run(string(c.ev.Type), func(t *testing.T) {
			e := audit.FromEvent(c.ev)
			if e.ID != c.ev.ID || !e.Timestamp.Equal(now) || e.Type != c.ev.Type || e.User.ID != "u1" ||
				e.Metadata.APIKeyID != "k1" || e.Metadata.RequestID != "r1" || string(e.Metadata.Data) != string(c.ev.Data) {
				t.Errorf("entry = %+v", e)
			}
			if e.Severity != c.severity || e.ComplianceCategory != c.category || e.Outcome != c.outcome || e.Description != c.descriptor {
				t.Errorf("severity/category/outcome/description = %s/%s/%s/%q", e.Severity, e.ComplianceCategory, e.Outcome, e.Description)
			}
		})
	}
	// Issue 34 item 11: an action taken in the console says so, and names the operator's key.
	viaConsole, err := event.AdminEvent(event.AdminAPIKeyRevoked, event.Admin{Action: "revoke", Target: event.Target{Kind: "api_key", ID: "key_x"},
		Subject: event.Subject{UserID: "admin", APIKeyID: "key_session", Via: "console", OperatorKeyID: "key_operator"}}, nil, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if e := audit.FromEvent(viaConsole); e.Metadata.Via != "console" || e.Metadata.OperatorKeyID != "key_operator" || e.Metadata.APIKeyID != "key_session" ||
		e.Description != "Admin revoke of api_key key_x (in the web console, by the operator of key key_operator)" {
		t.Errorf("a console action's entry: %+v", e)
	}
	if e := audit.FromEvent(cases[1].ev); e.Metadata.Endpoint != "/chat/completions" {
		t.Errorf("limit entry endpoint = %q", e.Metadata.Endpoint)
	}
}

func TestParseDefaultsAndRefusals(t *testing.T) {
	q, err := audit.Parse(audit.Params{}, now)
	if err != nil || !q.End.Equal(now) || !q.Start.Equal(now.Add(-7*24*time.Hour)) || q.Limit != audit.DefaultLimit {
		t.Fatalf("defaults = %+v, %v", q, err)
	}
	q, err = audit.Parse(audit.Params{StartDate: "2026-11-01", EndDate: "2026-11-02", Search: "  GPT "}, now)
	if err != nil || !q.End.Equal(time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)) || q.Search != "gpt" {
		t.Fatalf("dates = %+v, %v; a date as endDate includes that day", q, err)
	}
	long := audit.Params{StartDate: "2025-01-01", EndDate: "2026-12-01"}
	if _, err := audit.Parse(long, now); fault.KindOf(err) != fault.InvalidRequest {
		t.Errorf("a range of almost two years: %v, want refused", err)
	}
	refusals := []struct {
		param string
		p     audit.Params
	}{
		// Out of range, naming the field (a year-9999 end was an empty 200).
		{"endDate", audit.Params{EndDate: "9999-12-31"}},
		{"startDate", audit.Params{StartDate: "1999-12-31", EndDate: "2000-01-02"}},
	}
	for param, p := range map[string]audit.Params{
		"startDate": {StartDate: "2026-12-02", EndDate: "2026-12-01"},
		"endDate":   {EndDate: "tomorrow"},
		"type":      {Type: "api:nope"},
		"severity":  {Severity: "loud"},
		"limit":     {Limit: "1e3"},
		"cursor":    {Cursor: "djE6eCN5"}, // "v1:x#y": right shape, no time
		"search":    {Search: strings.Repeat("x", 201)},
	} {
		refusals = append(refusals, struct {
			param string
			p     audit.Params
		}{param, p})
	}
	for _, r := range refusals {
		var f *fault.Error
		if _, err := audit.Parse(r.p, now); !errors.As(err, &f) || f.Param != r.param {
			t.Errorf("%+v: %v, want a fault naming %s", r.p, err, r.param)
		}
	}
}
