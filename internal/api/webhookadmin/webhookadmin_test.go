package webhookadmin_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/webhookadmin"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// recorder is a Publisher that keeps what it is given.
type recorder struct {
	mu  sync.Mutex
	got []event.Event
}

func (r *recorder) Publish(_ context.Context, evs ...event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, evs...)
}
func (r *recorder) Flush(context.Context) error { return nil }

// fail renders a fault kind's status the way the server's table would for these routes.
func fail(w http.ResponseWriter, _ *http.Request, err error) {
	status := map[fault.Kind]int{fault.InvalidRequest: 400, fault.NotFound: 404, fault.TooLarge: 413}[fault.KindOf(err)]
	if status == 0 {
		status = 500
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"success": false, "message": err.Error()})
}

type server struct {
	*httptest.Server
	store  *boltstore.Store
	events *recorder
}

func newServer(t *testing.T) *server {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rec := &recorder{}
	guard := webhook.NewGuard(webhook.ReachPrivate)
	h := &webhookadmin.Handlers{Webhooks: s, Guard: guard, Audit: s.AuditLog(), Events: rec, Now: time.Now,
		Dispatcher: &webhook.Dispatcher{Store: s, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Poster: &webhook.Poster{Client: guard.Client(), Now: time.Now}}}
	mux := httpapi.Table(fail, h.Routes()...)
	admin := &apikey.Key{ID: "key_admin", UserID: "u_admin", Admin: true}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r.WithContext(identity.WithKey(r.Context(), admin)))
	}))
	t.Cleanup(srv.Close)
	return &server{Server: srv, store: s, events: rec}
}

func (s *server) do(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestWebhookAdministration(t *testing.T) {
	s := newServer(t)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	defer receiver.Close()

	code, out := s.do(t, "POST", "/admin/webhooks", `{"url":"`+receiver.URL+`","description":"ops","events":["api:model_failover"]}`)
	if code != 201 {
		t.Fatalf("create = %d %v", code, out)
	}
	wh := out["webhook"].(map[string]any)
	id, secret := wh["id"].(string), wh["secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") || wh["enabled"] != true {
		t.Fatalf("created = %v", wh)
	}

	t.Run("the secret is shown only on create and rotate", func(t *testing.T) {
		_, list := s.do(t, "GET", "/admin/webhooks", "")
		if strings.Contains(toJSON(list), secret) || len(list["webhooks"].([]any)) != 1 {
			t.Errorf("list = %v", list)
		}
		if cat := toJSON(list["eventCatalog"]); !strings.Contains(cat, "api:model_failover") || !strings.Contains(cat, "webhook:test") {
			t.Errorf("catalog = %s", cat)
		}
		_, got := s.do(t, "GET", "/admin/webhooks/"+id, "")
		if strings.Contains(toJSON(got), secret) {
			t.Errorf("get shows the secret")
		}
		code, rot := s.do(t, "POST", "/admin/webhooks/"+id+"/rotate-secret", "")
		newSecret, _ := rot["webhook"].(map[string]any)["secret"].(string)
		if code != 200 || !strings.HasPrefix(newSecret, "whsec_") || newSecret == secret {
			t.Errorf("rotate = %d %v", code, rot)
		}
	})

	t.Run("bad input is a 400 naming the field", func(t *testing.T) {
		for _, body := range []string{
			`{"url":"https://x.example","events":["api:nope"]}`,
			`{"url":"gopher://x.example","events":["*"]}`,
			`{"events":["*"]}`,
			`{"url":"https://x.example","events":["*"],"extra":1}`,
			`not json`,
		} {
			if code, out := s.do(t, "POST", "/admin/webhooks", body); code != 400 {
				t.Errorf("create %s = %d %v", body, code, out)
			}
		}
		if code, _ := s.do(t, "PATCH", "/admin/webhooks/"+id, `{"events":["nope"]}`); code != 400 {
			t.Errorf("patch with an unknown event = %d", code)
		}
		// Issue 34 item 10: a description reads as it is stored — no control or bidirectional
		// formatting character that makes a listing or a log show other text.
		for _, d := range []string{`invoice\u202egpj.exe`, `a\u2066b`, `a\u200fb`, `a\u0000b`, `a\nb`} {
			code, out := s.do(t, "POST", "/admin/webhooks", `{"url":"`+receiver.URL+`","events":["*"],"description":"`+d+`"}`)
			if code != 400 || !strings.Contains(toJSON(out), "description") {
				t.Errorf("create with description %s = %d %v, want 400 naming description", d, code, out)
			}
			if code, _ := s.do(t, "PATCH", "/admin/webhooks/"+id, `{"description":"`+d+`"}`); code != 400 {
				t.Errorf("patch with description %s = %d, want 400", d, code)
			}
		}
	})

	t.Run("update", func(t *testing.T) {
		code, out := s.do(t, "PATCH", "/admin/webhooks/"+id, `{"description":"changed","enabled":false}`)
		w := out["webhook"].(map[string]any)
		if code != 200 || w["description"] != "changed" || w["enabled"] != false || strings.Contains(toJSON(out), "whsec_") {
			t.Errorf("patch = %d %v", code, out)
		}
	})

	t.Run("test sends a delivery and it is listed", func(t *testing.T) {
		code, out := s.do(t, "POST", "/admin/webhooks/"+id+"/test", "")
		if code != 200 || out["success"] != true {
			t.Fatalf("test = %d %v", code, out)
		}
		_, list := s.do(t, "GET", "/admin/webhooks/"+id+"/deliveries", "")
		ds := list["deliveries"].([]any)
		d := ds[0].(map[string]any)
		if len(ds) != 1 || d["status"] != "succeeded" || d["statusCode"] != 204.0 || d["eventType"] != "webhook:test" {
			t.Errorf("deliveries = %v", ds)
		}
	})

	t.Run("delete, then 404", func(t *testing.T) {
		if code, _ := s.do(t, "DELETE", "/admin/webhooks/"+id, ""); code != 200 {
			t.Errorf("delete = %d", code)
		}
		for _, r := range [][2]string{{"GET", ""}, {"PATCH", "/"}, {"DELETE", ""}, {"POST", "/test"}, {"GET", "/deliveries"}, {"POST", "/rotate-secret"}} {
			path := "/admin/webhooks/" + id + strings.TrimSuffix(r[1], "/")
			body := ""
			if r[0] == "PATCH" {
				body = `{}`
			}
			if code, _ := s.do(t, r[0], path, body); code != 404 {
				t.Errorf("%s %s = %d, want 404", r[0], path, code)
			}
		}
	})

	t.Run("changes are recorded as admin events without secrets", func(t *testing.T) {
		s.events.mu.Lock()
		defer s.events.mu.Unlock()
		var types []string
		for _, e := range s.events.got {
			types = append(types, string(e.Type))
			if strings.Contains(string(e.Data), "whsec_") {
				t.Errorf("%s carries a secret: %s", e.Type, e.Data)
			}
			if event.SubjectOf(e).APIKeyID != "key_admin" {
				t.Errorf("%s has no actor: %s", e.Type, e.Data)
			}
		}
		want := "admin:webhook_created admin:webhook_secret_rotated admin:webhook_updated admin:webhook_deleted"
		if strings.Join(types, " ") != want {
			t.Errorf("events = %v, want %s", types, want)
		}
	})
}

func TestAuditLogs(t *testing.T) {
	s := newServer(t)
	w := &audit.Writer{Store: s.store.AuditLog()}
	now := time.Now()
	for _, e := range []event.Event{
		event.ModelFailoverEvent(event.Failover{FailedModel: "openai/a", NextModel: "b", Reason: "timeout", Subject: event.Subject{UserID: "u1", APIKeyID: "k1"}}, now.Add(-time.Minute)),
		event.LimitReachedEvent(event.Limit{Limit: "daily", Subject: event.Subject{UserID: "u2", APIKeyID: "k2"}}, now.Add(-2*time.Minute)),
	} {
		if err := w.Write(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	code, out := s.do(t, "GET", "/admin/audit-logs?userId=u1", "")
	logs := out["logs"].([]any)
	if code != 200 || len(logs) != 1 || logs[0].(map[string]any)["type"] != "api:model_failover" {
		t.Fatalf("audit-logs = %d %v", code, out)
	}
	code, out = s.do(t, "GET", "/admin/audit-logs?limit=1", "")
	next := out["pagination"].(map[string]any)["nextCursor"].(string)
	if code != 200 || next == "" {
		t.Fatalf("first page = %d %v", code, out)
	}
	_, out = s.do(t, "GET", "/admin/audit-logs?limit=1&cursor="+next, "")
	if logs := out["logs"].([]any); len(logs) != 1 || logs[0].(map[string]any)["type"] != "api:limit_reached" {
		t.Errorf("second page = %v", out)
	}
	for _, q := range []string{"startDate=yesterday", "type=api:nope", "severity=loud", "limit=0", "limit=201", "cursor=zzz",
		"startDate=2026-12-02&endDate=2026-12-01"} {
		if code, _ := s.do(t, "GET", "/admin/audit-logs?"+q, ""); code != 400 {
			t.Errorf("%s = %d, want 400", q, code)
		}
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Issue 21 item 5: a webhook URL's path and query (often a credential) reach no event and no
// audit entry: they record scheme and host and a fingerprint; the admin API shows the whole URL.
func TestEventsRecordNoWebhookURLPath(t *testing.T) {
	s := newServer(t)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	defer receiver.Close()
	url := receiver.URL + "/services/T000/B000/XXXXSECRET?token=hunter2"
	code, out := s.do(t, "POST", "/admin/webhooks", `{"url":"`+url+`","events":["*"]}`)
	if code != 201 || out["webhook"].(map[string]any)["url"] != url {
		t.Fatalf("create = %d %v, want the whole URL back", code, out)
	}
	id := out["webhook"].(map[string]any)["id"].(string)
	if code, out := s.do(t, "PATCH", "/admin/webhooks/"+id, `{"description":"x"}`); code != 200 {
		t.Fatalf("update = %d %v", code, out)
	}
	if code, out := s.do(t, "DELETE", "/admin/webhooks/"+id, ""); code != 200 {
		t.Fatalf("delete = %d %v", code, out)
	}
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	if len(s.events.got) != 3 {
		t.Fatalf("published %d events, want create, update and delete", len(s.events.got))
	}
	for _, ev := range s.events.got {
		raw := string(ev.Data)
		if strings.Contains(raw, "XXXXSECRET") || strings.Contains(raw, "hunter2") || !strings.Contains(raw, `"urlFingerprint":"sha256:`) ||
			!strings.Contains(raw, `"url":"`+receiver.URL+`"`) {
			t.Errorf("%s: %s, want the URL cut to its scheme and host, with a fingerprint", ev.Type, raw)
		}
	}
}

// Issue 21 item 10: rotating a secret keeps the old one signing beside the new one for an overlap
// (a day by default), so a receiver switches without losing a delivery; overlapSeconds 0 cuts it.
func TestRotationKeepsTheOldSecretSigningForItsOverlap(t *testing.T) {
	s := newServer(t)
	var mu sync.Mutex
	var sigs []string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sigs = append(sigs, r.Header.Get(webhook.HeaderSignature))
		mu.Unlock()
		w.WriteHeader(204)
	}))
	defer receiver.Close()
	_, out := s.do(t, "POST", "/admin/webhooks", `{"url":"`+receiver.URL+`","events":["*"]}`)
	id, old := out["webhook"].(map[string]any)["id"].(string), out["webhook"].(map[string]any)["secret"].(string)
	v1s := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var got []string
		for p := range strings.SplitSeq(sigs[len(sigs)-1], ",") {
			if v, ok := strings.CutPrefix(p, "v1="); ok {
				got = append(got, v)
			}
		}
		return got
	}
	code, rot := s.do(t, "POST", "/admin/webhooks/"+id+"/rotate-secret", "")
	if code != 200 || rot["webhook"].(map[string]any)["secret"] == old || rot["webhook"].(map[string]any)["previousSecret"] != nil {
		t.Fatalf("rotate = %d %v, want the new secret once and never the old", code, rot)
	}
	if code, out := s.do(t, "POST", "/admin/webhooks/"+id+"/test", ""); code != 200 {
		t.Fatalf("test = %d %v", code, out)
	}
	if got := v1s(); len(got) != 2 {
		t.Errorf("during the overlap a delivery carries %d signatures, want the new and the old", len(got))
	}
	if code, out := s.do(t, "POST", "/admin/webhooks/"+id+"/rotate-secret", `{"overlapSeconds":-1}`); code != 400 {
		t.Errorf("a negative overlap: %d %v, want 400", code, out)
	}
	if code, _ := s.do(t, "POST", "/admin/webhooks/"+id+"/rotate-secret", `{"overlapSeconds":0}`); code != 200 {
		t.Fatal("rotate with no overlap failed")
	}
	s.do(t, "POST", "/admin/webhooks/"+id+"/test", "")
	if got := v1s(); len(got) != 1 {
		t.Errorf("after a rotation with no overlap a delivery carries %d signatures, want 1", len(got))
	}
}
