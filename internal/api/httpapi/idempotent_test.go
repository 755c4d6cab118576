package httpapi_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/idempotency"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
)

// Idempotent runs a request carrying an Idempotency-Key once and replays its answer, but only a
// whole success: an error or a stream that broke off before its end ([DONE], a Messages
// stream's message_stop, a Responses stream's response.completed) runs again on the retry. The
// handler behind it reads the body as usual.
func TestIdempotentRecordsOnlyWholeSuccesses(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	guard := &idempotency.Guard{Store: s, PollMin: time.Millisecond, PollMax: 5 * time.Millisecond}
	for _, tc := range []struct {
		name     string
		answer   func(w http.ResponseWriter)
		recorded bool
	}{
		{"a JSON success", func(w http.ResponseWriter) { httpapi.WriteJSON(w, 200, map[string]bool{"ok": true}) }, true},
		{"a whole stream", func(w http.ResponseWriter) { sse := httpapi.StartSSE(w); _ = sse.Data([]byte(`{}`)); _ = sse.Done() }, true},
		{"a stream broken off", func(w http.ResponseWriter) { sse := httpapi.StartSSE(w); _ = sse.Data([]byte(`{}`)) }, false},
		{"a whole Messages stream", func(w http.ResponseWriter) {
			sse := httpapi.StartSSE(w)
			_ = sse.Event("message_start", []byte(`{"type":"message_start"}`))
			_ = sse.Event("message_stop", []byte(`{"type":"message_stop"}`))
		}, true},
		{"a Messages stream ended by its error event", func(w http.ResponseWriter) {
			sse := httpapi.StartSSE(w)
			_ = sse.Event("message_start", []byte(`{"type":"message_start"}`))
			_ = sse.Event("error", []byte(`{"type":"error","error":{"type":"overloaded_error","message":"cut"}}`))
		}, false},
		{"a Messages stream broken off", func(w http.ResponseWriter) {
			_ = httpapi.StartSSE(w).Event("message_start", []byte(`{"type":"message_start"}`))
		}, false},
		{"a whole Responses stream", func(w http.ResponseWriter) {
			sse := httpapi.StartSSE(w)
			_ = sse.Event("response.created", []byte(`{"type":"response.created"}`))
			_ = sse.Event("response.completed", []byte(`{"type":"response.completed"}`))
		}, true},
		{"a Responses stream cut at max_output_tokens", func(w http.ResponseWriter) {
			sse := httpapi.StartSSE(w)
			_ = sse.Event("response.created", []byte(`{"type":"response.created"}`))
			_ = sse.Event("response.incomplete", []byte(`{"type":"response.incomplete"}`))
		}, true},
		{"a Responses stream ended by response.failed", func(w http.ResponseWriter) {
			sse := httpapi.StartSSE(w)
			_ = sse.Event("response.created", []byte(`{"type":"response.created"}`))
			_ = sse.Event("response.failed", []byte(`{"type":"response.failed"}`))
		}, false},
		{"an error", func(w http.ResponseWriter) { httpapi.WriteJSON(w, 502, map[string]bool{"ok": false}) }, false},
	} {
		key := strings.ReplaceAll(tc.name, " ", "-") // one key per case
		t.Run(tc.name, func(t *testing.T) {
			runs := 0
			var bodies []string
			h := httpapi.Idempotent(guard, (&rendered{}).render, "POST /x", 1<<10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs++
				body, err := httpapi.ReadJSONObject(w, r, 1<<10)
				if err != nil {
					t.Fatal(err)
				}
				bodies = append(bodies, string(body))
				tc.answer(w)
			}))
			send := func() *httptest.ResponseRecorder {
				r := httptest.NewRequest("POST", "/x", strings.NewReader(`{"a":1}`))
				r.Header.Set("Idempotency-Key", key)
				r = r.WithContext(identity.WithKey(r.Context(), &apikey.Key{ID: "key_1"}))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				return rec
			}
			first, second := send(), send()
			if runs == 0 {
				t.Fatalf("never ran: %d %s", first.Code, first.Body)
			}
			wantRuns := 2
			if tc.recorded {
				wantRuns = 1
				if second.Header().Get(httpapi.ReplayedHeader) != "true" || second.Body.String() != first.Body.String() || second.Code != first.Code {
					t.Errorf("replay %d %q %q, want the first answer %d %q", second.Code, second.Header().Get(httpapi.ReplayedHeader), second.Body, first.Code, first.Body)
				}
			}
			if runs != wantRuns || bodies[len(bodies)-1] != `{"a":1}` {
				t.Errorf("ran %d times with bodies %q, want %d with the request's body", runs, bodies, wantRuns)
			}
		})
	}
}

// A request without the header passes straight through, its body untouched.
func TestIdempotentPassesRequestsWithoutAKey(t *testing.T) {
	ran := false
	h := httpapi.Idempotent(nil, (&rendered{}).render, "POST /x", 1<<10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := httpapi.ReadJSONObject(w, r, 1<<10)
		ran = err == nil && string(body) == `{"a":1}`
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/x", strings.NewReader(`{"a":1}`)))
	if !ran {
		t.Error("the handler did not run with the body")
	}
}

// releasedTwice is a store whose Release is retried after its first answer was lost: the retry
// finds the key free and answers not-owner, as the store contract says an absent key does.
type releasedTwice struct{ *boltstore.Store }

func (s releasedTwice) Release(ctx context.Context, scope, key, token string) error {
	if err := s.Store.Release(ctx, scope, key, token); err != nil {
		return err
	}
	return s.Store.Release(ctx, scope, key, token)
}

// A release whose retry answers not-owner has freed the key: nothing is logged, and the next
// request with the key runs.
func TestIdempotentTakesAFreedKeyAsReleased(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var logs bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	guard := &idempotency.Guard{Store: releasedTwice{s}, PollMin: time.Millisecond, PollMax: 5 * time.Millisecond}
	runs := 0
	h := httpapi.Idempotent(guard, (&rendered{}).render, "POST /x", 1<<10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		httpapi.WriteJSON(w, 502, map[string]bool{"ok": false})
	}))
	for range 2 {
		r := httptest.NewRequest("POST", "/x", strings.NewReader(`{"a":1}`))
		r.Header.Set("Idempotency-Key", "k")
		r = r.WithContext(identity.WithKey(r.Context(), &apikey.Key{ID: "key_1"}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != 502 {
			t.Fatalf("answer %d %s, want the handler's 502", rec.Code, rec.Body)
		}
	}
	if runs != 2 || logs.Len() != 0 {
		t.Errorf("ran %d times, logged %q; want 2 runs (the key freed each time) and nothing logged", runs, logs.String())
	}
}
