package adminapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/adminapi"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
)

func TestBreakerRoutes(t *testing.T) {
	start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var actions []string
	b := breaker.New(newStore(t), breaker.Config{Now: func() time.Time { return start }}, func(_ context.Context, e breaker.Event) {
		mu.Lock()
		defer mu.Unlock()
		actions = append(actions, e.Action+" by "+e.Actor)
	})
	var failed error
	mux := httpapi.Table(func(w http.ResponseWriter, r *http.Request, err error) {
		failed = err
		w.WriteHeader(599)
	}, adminapi.Breakers{Breakers: b}.Routes()...)
	do := func(method, path, body string) (int, map[string]any) {
		failed = nil
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req = req.WithContext(identity.WithKey(req.Context(), &apikey.Key{ID: "key_ops", Admin: true}))
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}

	invalid := []struct{ name, body, param string }{
		{"not JSON", `nope`, ""},
		{"unknown field", `{"subjectType":"key","subjectId":"k","ttl":5}`, "ttl"},
		{"bad subject type", `{"subjectType":"team","subjectId":"k"}`, "subjectType"},
		{"missing subject id", `{"subjectType":"key"}`, "subjectId"},
		{"negative duration", `{"subjectType":"key","subjectId":"k","durationSeconds":-1}`, "durationSeconds"},
		{"reason too long", `{"subjectType":"key","subjectId":"k","reason":"` + strings.Repeat("x", 501) + `"}`, "reason"},
	}
	for _, tt := range invalid {
		t.Run("open refuses "+tt.name, func(t *testing.T) {
			do(http.MethodPost, "/admin/circuit-breakers", tt.body)
			var f *fault.Error
			if fault.KindOf(failed) != fault.InvalidRequest || !errors.As(failed, &f) || f.Param != tt.param {
				t.Errorf("failed with %v, want 400 naming %q", failed, tt.param)
			}
		})
	}

	t.Run("open refuses a body over 64 KiB", func(t *testing.T) {
		do(http.MethodPost, "/admin/circuit-breakers", `{"subjectType":"key","subjectId":"k","reason":"`+strings.Repeat("x", 64<<10)+`"}`)
		if fault.KindOf(failed) != fault.TooLarge {
			t.Errorf("failed with %v, want 413", failed)
		}
	})

	status, out := do(http.MethodPost, "/admin/circuit-breakers", `{"subjectType":"key","subjectId":"key_1","reason":"exfiltration","durationSeconds":600}`)
	cb, _ := out["circuitBreaker"].(map[string]any)
	if status != http.StatusCreated || cb["subject"] != "key:key_1" || cb["openedBy"] != "admin:key_ops" || cb["closesAt"] != "2026-12-01T02:10:00Z" {
		t.Fatalf("open: %d %v (failed %v)", status, out, failed)
	}
	if _, out := do(http.MethodGet, "/admin/circuit-breakers", ""); len(out["circuitBreakers"].([]any)) != 1 {
		t.Errorf("list: %v", out)
	}
	if status, _ := do(http.MethodDelete, "/admin/circuit-breakers/key/key_1", ""); status != 200 {
		t.Errorf("close: %d (%v)", status, failed)
	}
	if do(http.MethodDelete, "/admin/circuit-breakers/key/key_1", ""); fault.KindOf(failed) != fault.NotFound {
		t.Errorf("second close: %v, want 404", failed)
	}
	if _, out := do(http.MethodGet, "/admin/circuit-breakers", ""); len(out["circuitBreakers"].([]any)) != 0 {
		t.Errorf("list after close: %v", out)
	}
	if got := strings.Join(actions, ", "); got != "open by admin:key_ops, close by admin:key_ops" {
		t.Errorf("audit: %s", got)
	}
}

func newStore(t *testing.T) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "gateway.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Issue 34 item 10: with the key administration at hand, a breaker is opened only for a key or a
// user that exists: any other subject is a 404 and nothing is stored.
func TestBreakerRoutesRefuseASubjectThatDoesNotExist(t *testing.T) {
	store := newStore(t)
	svc := &keyadmin.Service{Keys: store, Users: store}
	ctx := identity.WithKey(context.Background(), &apikey.Key{ID: "key_ops", Admin: true})
	created, err := svc.Create(ctx, keyadmin.KeyInput{Name: keyadmin.Some("app"), UserID: keyadmin.Some("team-a")})
	if err != nil {
		t.Fatal(err)
	}
	b := breaker.New(store, breaker.Config{}, nil)
	var failed error
	mux := httpapi.Table(func(w http.ResponseWriter, r *http.Request, err error) {
		failed = err
		w.WriteHeader(599)
	}, adminapi.Breakers{Breakers: b, Keys: svc}.Routes()...)
	for _, tc := range []struct {
		body   string
		exists bool
	}{
		{`{"subjectType":"key","subjectId":"key_nope"}`, false},
		{`{"subjectType":"user","subjectId":"nobody"}`, false},
		{`{"subjectType":"key","subjectId":"` + created.Key.ID + `"}`, true},
		{`{"subjectType":"user","subjectId":"team-a"}`, true},
	} {
		failed = nil
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/admin/circuit-breakers", strings.NewReader(tc.body)).WithContext(ctx))
		if tc.exists && (failed != nil || rec.Code != http.StatusCreated) || !tc.exists && fault.KindOf(failed) != fault.NotFound {
			t.Errorf("%s: %d, error %v; want 201 when the subject exists, else 404", tc.body, rec.Code, failed)
		}
	}
	if open, _ := b.List(context.Background()); len(open) != 2 {
		t.Errorf("%d breakers open, want the 2 whose subject exists", len(open))
	}
}
