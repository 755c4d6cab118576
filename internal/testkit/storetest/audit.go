package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/event"
)

// RunAudit checks the audit.Store contract: idempotent writes, every filter, newest first, cursor
// pagination across days, expiry.
func RunAudit(t *testing.T, newStore func(t *testing.T) audit.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	far := now.Add(audit.Retention)
	entry := func(id string, age time.Duration, typ event.Type, sev, user, key, desc string) audit.Entry {
		return audit.Entry{ID: id, Timestamp: now.Add(-age), Type: typ, Severity: sev, Description: desc,
			User: audit.User{ID: user}, Metadata: audit.Metadata{APIKeyID: key, Data: json.RawMessage(`{"k":"v"}`)},
			ComplianceCategory: "availability", Outcome: "failover"}
	}
	seed := []audit.Entry{
		entry("evt_1", 1*time.Hour, event.ModelFailover, audit.SeverityWarning, "u1", "k1", "Model openai/a failed"),
		entry("evt_2", 2*time.Hour, event.LimitReached, audit.SeverityWarning, "u2", "k2", "Limit daily reached"),
		entry("evt_3", 26*time.Hour, event.ModelFailover, audit.SeverityWarning, "u1", "k3", "Model GOOGLE/x failed"),
		entry("evt_4", 50*time.Hour, event.CircuitBreakerOpened, audit.SeverityCritical, "u3", "k1", "Circuit breaker opened"),
		entry("evt_5", 10*24*time.Hour, event.ModelFailover, audit.SeverityWarning, "u1", "k1", "old"),
	}
	seeded := func(t *testing.T) audit.Store {
		s := newStore(t)
		for _, e := range seed {
			if _, err := s.Put(ctx, e, far); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	ids := func(p audit.Page) string {
		var out []string
		for _, e := range p.Entries {
			out = append(out, e.ID)
		}
		return fmt.Sprint(out)
	}
	query := func(t *testing.T, s audit.Store, p audit.Params) audit.Page {
		t.Helper()
		q, err := audit.Parse(p, now.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		page, err := s.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return page
	}

	t.Run("a redelivered event writes no second entry", func(t *testing.T) {
		s := newStore(t)
		e := seed[0]
		for i, want := range []bool{true, false} {
			created, err := s.Put(ctx, e, far)
			if err != nil || created != want {
				t.Fatalf("Put #%d = %v, %v; want created %v", i+1, created, err, want)
			}
		}
		if got := query(t, s, audit.Params{}); ids(got) != "[evt_1]" {
			t.Errorf("entries = %s", ids(got))
		}
	})

	s := seeded(t)
	cases := []struct {
		name string
		p    audit.Params
		want string
	}{
		{"default is the last 7 days, newest first", audit.Params{}, "[evt_1 evt_2 evt_3 evt_4]"},
		{"date range", audit.Params{StartDate: now.Add(-30 * time.Hour).Format(time.RFC3339), EndDate: now.Add(-90 * time.Minute).Format(time.RFC3339)}, "[evt_2 evt_3]"},
		{"type", audit.Params{Type: "api:model_failover"}, "[evt_1 evt_3]"},
		{"severity", audit.Params{Severity: "critical"}, "[evt_4]"},
		{"user", audit.Params{UserID: "u1"}, "[evt_1 evt_3]"},
		{"api key", audit.Params{APIKeyID: "k1"}, "[evt_1 evt_4]"},
		{"text search ignores case", audit.Params{Search: "google"}, "[evt_3]"},
		{"filters combine", audit.Params{UserID: "u1", APIKeyID: "k3"}, "[evt_3]"},
		{"older range reaches old entries", audit.Params{StartDate: now.Add(-11 * 24 * time.Hour).Format(time.RFC3339)}, "[evt_1 evt_2 evt_3 evt_4 evt_5]"},
	}
	for _, c := range cases {
		t.Run("filter: "+c.name, func(t *testing.T) {
			if got := query(t, s, c.p); ids(got) != c.want || got.Next != "" {
				t.Errorf("entries = %s next %q, want %s", ids(got), got.Next, c.want)
			}
		})
	}

	t.Run("cursor pages through without gaps or repeats", func(t *testing.T) {
		var all []string
		p := audit.Params{Limit: "2", StartDate: now.Add(-11 * 24 * time.Hour).Format(time.RFC3339)}
		for range 5 {
			page := query(t, s, p)
			for _, e := range page.Entries {
				all = append(all, e.ID)
			}
			if page.Next == "" {
				break
			}
			p.Cursor = page.Next
		}
		if fmt.Sprint(all) != "[evt_1 evt_2 evt_3 evt_4 evt_5]" {
			t.Errorf("paged = %v", all)
		}
	})

	t.Run("expired entries are not listed", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.Put(ctx, seed[0], now.Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := query(t, s, audit.Params{}); len(got.Entries) != 0 {
			t.Errorf("entries = %s", ids(got))
		}
	})

	t.Run("entry reads back whole", func(t *testing.T) {
		got := query(t, s, audit.Params{Search: "google"})
		want := seed[2]
		if len(got.Entries) != 1 {
			t.Fatalf("entries = %s", ids(got))
		}
		g := got.Entries[0]
		if !g.Timestamp.Equal(want.Timestamp) || g.Severity != want.Severity || g.User != want.User ||
			g.Metadata.APIKeyID != want.Metadata.APIKeyID || string(g.Metadata.Data) != `{"k":"v"}` ||
			g.ComplianceCategory != want.ComplianceCategory || g.Outcome != want.Outcome || g.Description != want.Description {
			t.Errorf("got %+v, want %+v", g, want)
		}
	})
}
