package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
)

func TestWithBudget(t *testing.T) {
	var got context.Context
	h := func(budget time.Duration) http.Handler {
		return httpapi.WithBudget(budget, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Context() }))
	}
	t.Run("sets-deadline", func(t *testing.T) {
		h(2*time.Second).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/", nil))
		d, ok := got.Deadline()
		if !ok || time.Until(d) > 2*time.Second || time.Until(d) < time.Second {
			t.Fatalf("deadline %v %v", d, ok)
		}
	})
	t.Run("keeps-platform-deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		want, _ := ctx.Deadline()
		h(time.Second).ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, "POST", "/", nil))
		if d, _ := got.Deadline(); !d.Equal(want) {
			t.Fatalf("deadline %v, want the platform's %v", d, want)
		}
	})
	t.Run("zero-budget-is-no-budget", func(t *testing.T) {
		// An unset budget must not expire every request before it starts.
		h(0).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/", nil))
		if got.Err() != nil {
			t.Fatalf("request context already ended: %v", got.Err())
		}
		if _, ok := got.Deadline(); ok {
			t.Error("a zero budget set a deadline")
		}
	})
}

func TestReadJSONObject(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		param      string
	}{
		{"object", `{"a":1}`, 0, ""},
		{"too-large", `{"a":"` + strings.Repeat("x", 100) + `"}`, 413, ""},
		{"array", `[1]`, 400, ""},
		{"string", `"x"`, 400, ""},
		{"invalid", `{"a":`, 400, ""},
		{"empty", ``, 400, ""},
		{"duplicate-field", `{"model":"a","model":"b"}`, 400, "model"},
		{"invalid-utf8-in-a-string", "{\"messages\":[{\"content\":\"a\xff\"}]}", 400, "messages[0].content"},
		{"lone-high-surrogate", `{"messages":[{"content":"a\ud800b"}]}`, 400, "messages[0].content"},
		{"lone-low-surrogate", `{"x":"\udc00"}`, 400, "x"},
		{"high-surrogate-at-end", `{"x":"a\uD83D"}`, 400, "x"},
		{"surrogate-in-a-key", `{"\ud800":1}`, 400, "<key>"},
		{"paired-surrogates-are-text", `{"x":"\ud83d\ude00"}`, 0, ""},
		{"escaped-backslash-then-u", `{"x":"\\ud800"}`, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			body, err := httpapi.ReadJSONObject(rec, httptest.NewRequest("POST", "/", strings.NewReader(tc.body)), 64)
			if tc.status == 0 {
				if err != nil || string(body) != tc.body {
					t.Fatalf("error %v body %q", err, body)
				}
				return
			}
			f := fault.From(err)
			if err == nil || httpapi.Status(f) != tc.status || f.Message == "" || f.Param != tc.param {
				t.Fatalf("error %+v, want status %d param %q", f, tc.status, tc.param)
			}
		})
	}
}

type keys map[string]*apikey.Key

func (k keys) KeyByHash(_ context.Context, hash string) (*apikey.Key, error) {
	if hash == "boom" {
		return nil, errors.New("store down")
	}
	if key, ok := k[hash]; ok {
		return key, nil
	}
	return nil, apikey.ErrNotFound
}

func TestAuthenticate(t *testing.T) {
	secret := apikey.NewSecret()
	hash, _ := apikey.Hash(secret)
	past := time.Now().Add(-time.Minute)
	revokedSecret := apikey.NewSecret()
	revokedHash, _ := apikey.Hash(revokedSecret)
	session := apikey.NewSessionSecret()
	sessionHash, _ := apikey.SessionHash(session)
	store := keys{hash: {ID: "k1"}, revokedHash: {ID: "k2", RevokedAt: &past}, sessionHash: {ID: "s1", Admin: true, SessionOf: "k1"}}
	render := func(w http.ResponseWriter, r *http.Request, err error) {
		f := fault.From(err)
		http.Error(w, f.Message, httpapi.Status(f))
	}
	var seen *apikey.Key
	h := httpapi.Authenticate(store, render, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = identity.Key(r.Context()) }))
	for _, tc := range []struct {
		name, header string
		status       int
	}{
		{"missing", "", 401},
		{"empty-bearer", "Bearer ", 401},
		{"malformed", "Bearer sk-nothex", 401},
		{"unknown", "Bearer " + apikey.NewSecret(), 401},
		{"revoked", "Bearer " + revokedSecret, 401},
		// Issue 34 item 2: a console session's secret is the console's cookie, no bearer credential.
		{"session", "Bearer " + session, 401},
		{"valid", "Bearer " + secret, 200},
		{"valid-trailing-space", "Bearer " + secret + " ", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			req := httptest.NewRequest("POST", "/", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			if (tc.status == 200) != (seen != nil && seen.ID == "k1") {
				t.Errorf("key in context: %+v", seen)
			}
		})
	}
}

// A request the process serves as a key it authenticated itself (the console, as its session) is
// admitted as that key with no Authorization header; without ActingAs the same request is a 401.
func TestAuthenticateAdmitsTheKeyTheProcessActsAs(t *testing.T) {
	render := func(w http.ResponseWriter, r *http.Request, err error) {
		w.WriteHeader(httpapi.Status(fault.From(err)))
	}
	var seen *apikey.Key
	h := httpapi.Authenticate(keys{}, render, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = identity.Key(r.Context()) }))
	session := &apikey.Key{ID: "s1", Admin: true, SessionOf: "k1"}
	for _, tc := range []struct {
		name   string
		req    *http.Request
		status int
		want   *apikey.Key
	}{
		{"acting as the session", httpapi.ActingAs(httptest.NewRequest("GET", "/", nil), session), 200, session},
		{"no credential", httptest.NewRequest("GET", "/", nil), 401, nil},
	} {
		seen = nil
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, tc.req)
		if rec.Code != tc.status || seen != tc.want {
			t.Errorf("%s: status %d, key %+v; want %d and %+v", tc.name, rec.Code, seen, tc.status, tc.want)
		}
	}
}

func TestAuthenticateRefusesTwoCredentials(t *testing.T) {
	secret := apikey.NewSecret()
	hash, _ := apikey.Hash(secret)
	render := func(w http.ResponseWriter, r *http.Request, err error) {
		w.WriteHeader(httpapi.Status(fault.From(err)))
	}
	h := httpapi.Authenticate(keys{hash: {ID: "k1"}}, render, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest("POST", "/", nil)
	req.Header.Add("Authorization", "Bearer "+secret)
	req.Header.Add("Authorization", "Bearer "+apikey.NewSecret())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("two Authorization headers: status %d, want 401", rec.Code)
	}
}

func TestRequestIDs(t *testing.T) {
	var inCtx string
	h := httpapi.WithRequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { inCtx = identity.RequestID(r.Context()) }))
	seen := map[string]bool{}
	for range 100 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		id := rec.Header().Get("X-Request-Id")
		if id == "" || id != inCtx || seen[id] {
			t.Fatalf("request id %q (context %q, repeated %v)", id, inCtx, seen[id])
		}
		seen[id] = true
	}
}

func TestSSE(t *testing.T) {
	rec := httptest.NewRecorder()
	s := httpapi.StartSSE(rec)
	_ = s.Data([]byte(`{"a":1}`))
	_ = s.Begin()
	_, _ = s.Writer().Write([]byte(`{"b":2}`))
	_ = s.End()
	_ = s.Done()
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/event-stream" || !rec.Flushed {
		t.Fatalf("status %d content-type %q flushed %v", rec.Code, rec.Header().Get("Content-Type"), rec.Flushed)
	}
	if want := "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n"; rec.Body.String() != want {
		t.Errorf("got %q want %q", rec.Body.String(), want)
	}
}

// failingKeys is a key store that fails every lookup with err.
type failingKeys struct{ err error }

func (f failingKeys) KeyByHash(context.Context, string) (*apikey.Key, error) { return nil, f.err }

type roleLacks struct{}

func (roleLacks) Error() string { return "AccessDenied" }
func (roleLacks) Fix() string   { return "the function's role lacks dynamodb:GetItem on table keys" }

// A key store that cannot be read now is a 503 to retry; one the deployment may not read is a
// configuration error (500, code configuration_error), which no retry mends.
func TestAuthenticateTellsAKeyStoreOutageFromAMisconfiguration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"outage", errors.New("store down"), http.StatusServiceUnavailable, ""},
		{"misconfigured", roleLacks{}, http.StatusInternalServerError, fault.CodeConfiguration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *fault.Error
			render := func(w http.ResponseWriter, r *http.Request, err error) {
				got = fault.From(err)
				w.WriteHeader(httpapi.Status(got))
			}
			h := httpapi.Authenticate(failingKeys{tc.err}, render, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				t.Error("a request passed a key store that failed")
			}))
			req := httptest.NewRequest("POST", "/", nil)
			req.Header.Set("Authorization", "Bearer "+apikey.NewSecret())
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status || got == nil || got.Code != tc.code {
				t.Fatalf("status %d, error %+v; want %d with code %q", rec.Code, got, tc.status, tc.code)
			}
		})
	}
}
