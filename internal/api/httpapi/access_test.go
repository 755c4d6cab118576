package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// One JSON access line per request: request id, route, key id (never the secret), status, the
// completion's served model and attempts, latency and bytes — refused requests included.
func TestAccessLogIsOneLinePerRequest(t *testing.T) {
	secret := apikey.NewSecret()
	hash, _ := apikey.Hash(secret)
	var logs bytes.Buffer
	render := func(w http.ResponseWriter, r *http.Request, err error) {
		w.WriteHeader(httpapi.Status(fault.From(err)))
	}
	h := httpapi.WithRequestID(httpapi.AccessLog(slog.New(slog.NewJSONHandler(&logs, nil)),
		httpapi.Authenticate(keys{hash: {ID: "key_7"}}, render, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			httpapi.NoteCompletion(r.Context(), "key_7", "demo/ok", 2)
			_, _ = w.Write([]byte("hello"))
			_, _ = io.WriteString(w, ", world") // a string writer's bytes count too
		}))))
	for _, auth := range []string{"Bearer " + secret, ""} {
		req := httptest.NewRequest("POST", "/v1/chat/completions", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || strings.Contains(logs.String(), secret) {
		t.Fatalf("%d lines (secret present: %v):\n%s", len(lines), strings.Contains(logs.String(), secret), logs.String())
	}
	var served, refused map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &served)
	_ = json.Unmarshal([]byte(lines[1]), &refused)
	if served["key_id"] != "key_7" || served["served_model"] != "demo/ok" || served["attempts"] != float64(2) || served["status"] != float64(200) ||
		served["bytes"] != float64(12) || served["route"] != "POST /v1/chat/completions" || !strings.HasPrefix(served["request_id"].(string), "req_") {
		t.Errorf("served line %s", lines[0])
	}
	if refused["status"] != float64(401) || refused["key_id"] != nil {
		t.Errorf("refused line %s", lines[1])
	}
}

// An endpoint served in process inside another on the same request (the console's proxy to the
// API) writes its own line: what the inner one learns (its key, its completion, its status) is not
// reported as the outer one's, and both carry the request's one id.
func TestNestedAccessLinesStayApart(t *testing.T) {
	secret := apikey.NewSecret()
	hash, _ := apikey.Hash(secret)
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	render := func(w http.ResponseWriter, r *http.Request, err error) {
		w.WriteHeader(httpapi.Status(fault.From(err)))
	}
	var seen *apikey.Key
	inner := httpapi.AccessLog(log, httpapi.Authenticate(keys{hash: {ID: "key_in"}}, render, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = identity.Key(r.Context())
		httpapi.NoteCompletion(r.Context(), "key_in", "demo/ok", 1)
		w.WriteHeader(http.StatusCreated)
	})))
	outer := httpapi.WithRequestID(httpapi.AccessLog(log, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := r.Clone(r.Context())
		out.Header.Set("Authorization", "Bearer "+secret)
		inner.ServeHTTP(httptest.NewRecorder(), out)
		if k := identity.Key(r.Context()); k != nil {
			t.Errorf("the outer request took the inner one's key %q", k.ID)
		}
		w.WriteHeader(http.StatusAccepted)
	})))
	outer.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/console/api/x", nil))
	if seen == nil || seen.ID != "key_in" {
		t.Fatalf("the inner handler saw key %v", seen)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), logs.String())
	}
	var in, out map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &in)
	_ = json.Unmarshal([]byte(lines[1]), &out)
	if in["key_id"] != "key_in" || in["status"] != float64(201) || in["served_model"] != "demo/ok" {
		t.Errorf("inner line %s", lines[0])
	}
	if out["key_id"] != nil || out["status"] != float64(202) || out["served_model"] != nil {
		t.Errorf("outer line %s", lines[1])
	}
	if in["request_id"] == nil || in["request_id"] != out["request_id"] {
		t.Errorf("request ids %v and %v", in["request_id"], out["request_id"])
	}
}

// Issue 34 item 15: a request its client cancels before any answer is logged as status 499,
// cancelled — not as the 200 with no bytes net/http would imply; one answered is logged as it was,
// even if its client leaves afterwards.
func TestAccessLogSaysWhenTheClientWentAway(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	for _, answered := range []bool{false, true} {
		h := httpapi.WithRequestID(httpapi.AccessLog(log, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if answered {
				w.WriteHeader(http.StatusOK)
			}
			<-r.Context().Done() // the client goes away while the chain runs
		})))
		ctx, cancel := context.WithCancel(context.Background())
		req := httptest.NewRequest("POST", "/v1/chat/completions", nil).WithContext(ctx)
		go cancel()
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	// A handler that answers nothing to a caller still there sent net/http's implicit 200.
	httpapi.WithRequestID(httpapi.AccessLog(log, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/usage", nil))
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), logs.String())
	}
	for i, want := range []struct {
		status    float64
		cancelled any
	}{{499, true}, {200, nil}, {200, nil}} {
		var line map[string]any
		_ = json.Unmarshal([]byte(lines[i]), &line)
		if line["status"] != want.status || line["cancelled"] != want.cancelled {
			t.Errorf("line %d: %s, want status %v cancelled %v", i, lines[i], want.status, want.cancelled)
		}
	}
}
