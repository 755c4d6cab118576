package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/console"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
)

// recorder keeps what the console published and what reached the API behind it.
type recorder struct {
	mu     sync.Mutex
	events []event.Event
	calls  []*http.Request
}

func (r *recorder) Publish(_ context.Context, evs ...event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, evs...)
}

func (r *recorder) Flush(context.Context) error { return nil }

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.calls = append(r.calls, req.Clone(context.Background()))
	r.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

type fixture struct {
	h             http.Handler
	rec           *recorder
	store         *boltstore.Store
	admin, normal string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "gateway.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := &fixture{rec: &recorder{}, store: store}
	for _, k := range []struct {
		secret *string
		admin  bool
	}{{&f.admin, true}, {&f.normal, false}} {
		*k.secret = apikey.NewSecret()
		hash, _ := apikey.Hash(*k.secret)
		if err := store.CreateKey(context.Background(), &apikey.Key{ID: apikey.NewID(), Hash: hash, Prefix: apikey.Prefix(*k.secret),
			Name: "ops", UserID: "ops", Admin: k.admin, CreatedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
	}
	f.h = console.New(console.Config{API: f.rec, Keys: store, Sessions: &keyadmin.Service{Keys: store, Users: store}, Events: f.rec}).Handler()
	return f
}

// do sends a request as a same-origin browser page would (Sec-Fetch-Site: same-origin).
func (f *fixture) do(method, target, body string, cookie *http.Cookie, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	return w
}

func (f *fixture) signIn(t *testing.T, target string) *http.Cookie {
	t.Helper()
	w := f.do("POST", target, `{"key":"`+f.admin+`"}`, nil)
	if w.Code != http.StatusOK {
		t.Fatalf("sign-in: %d %s", w.Code, w.Body)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == console.CookieName {
			return c
		}
	}
	t.Fatalf("sign-in set no session cookie: %v", w.Header())
	return nil
}

func TestSignInRefusesANormalKeyClearly(t *testing.T) {
	f := newFixture(t)
	w := f.do("POST", "http://127.0.0.1/console/session", `{"key":"`+f.normal+`"}`, nil)
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "not an admin key") && !strings.Contains(w.Body.String(), "Not an admin key") {
		t.Errorf("a normal key: %d %s", w.Code, w.Body)
	}
	if len(w.Result().Cookies()) != 0 {
		t.Errorf("a refused sign-in set cookies: %v", w.Result().Cookies())
	}
	for _, body := range []string{`{"key":"sk-nope"}`, `not json`, `{"key":"` + apikey.NewSecret() + `"}`} {
		if w := f.do("POST", "http://127.0.0.1/console/session", body, nil); w.Code != http.StatusUnauthorized && w.Code != http.StatusBadRequest {
			t.Errorf("sign-in with %s: %d %s", body, w.Code, w.Body)
		}
	}
}

// The sign-in body is read like every admin body: strictly, each refusal naming what is wrong.
func TestSignInReadsItsBodyStrictly(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		body   string
		status int
		names  string
	}{
		{`{"key":"` + f.admin + `","remember":true}`, http.StatusBadRequest, "remember"},
		{`{"key":"` + f.admin + `","key":"` + f.normal + `"}`, http.StatusBadRequest, "appears more than once"},
		{`{"key":"` + f.admin + `"} {}`, http.StatusBadRequest, "after"},
		{`{"key":"` + strings.Repeat("x", 5<<10) + `"}`, http.StatusRequestEntityTooLarge, "bytes"},
	} {
		w := f.do("POST", "http://127.0.0.1/console/session", tc.body, nil)
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.names) || len(w.Result().Cookies()) != 0 {
			t.Errorf("sign-in with %.60s: %d %s, want %d naming %s and no cookie", tc.body, w.Code, w.Body, tc.status, tc.names)
		}
	}
}

func TestSessionCookieFlags(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		target string
		secure bool
	}{{"http://127.0.0.1:8080/console/session", false}, {"http://localhost/console/session", false},
		{"https://abc.execute-api.eu-west-1.amazonaws.com/console/session", true}} {
		c := f.signIn(t, tc.target)
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.MaxAge <= 0 || c.Expires.IsZero() || c.Secure != tc.secure {
			t.Errorf("%s: cookie %+v, want HttpOnly, SameSite=Strict, an expiry, Secure=%v", tc.target, c, tc.secure)
		}
		if c.Value == f.admin {
			t.Error("the cookie holds the admin key itself")
		}
	}
}

func TestProxyCallsTheAPIAsTheSessionAndAuditsChanges(t *testing.T) {
	f := newFixture(t)
	c := f.signIn(t, "http://127.0.0.1/console/session")
	if w := f.do("GET", "http://127.0.0.1/console/api/admin/api-keys?limit=5", "", c); w.Code != http.StatusAccepted {
		t.Fatalf("GET through the console: %d %s", w.Code, w.Body)
	}
	if w := f.do("DELETE", "http://127.0.0.1/console/api/admin/circuit-breakers/key/k1?reason=fixed", "", c); w.Code != http.StatusAccepted {
		t.Fatalf("DELETE through the console: %d %s", w.Code, w.Body)
	}
	playKey := apikey.NewSecret()
	if w := f.do("POST", "http://127.0.0.1/console/api/v1/chat/completions", "{}", c, "Authorization", "Bearer "+playKey); w.Code != http.StatusAccepted {
		t.Fatalf("POST as another key: %d %s", w.Code, w.Body)
	}
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	if len(f.rec.calls) != 3 {
		t.Fatalf("%d calls reached the API", len(f.rec.calls))
	}
	get, del, play := f.rec.calls[0], f.rec.calls[1], f.rec.calls[2]
	if get.URL.Path != "/admin/api-keys" || get.URL.RawQuery != "limit=5" || get.Header.Get("Authorization") != "Bearer "+c.Value || get.Header.Get("Cookie") != "" {
		t.Errorf("the API got %s ?%s Authorization %q Cookie %q", get.URL.Path, get.URL.RawQuery, get.Header.Get("Authorization"), get.Header.Get("Cookie"))
	}
	if del.URL.Path != "/admin/circuit-breakers/key/k1" || play.Header.Get("Authorization") != "Bearer "+playKey {
		t.Errorf("the API got %s, and the playground's call as %q", del.URL.Path, play.Header.Get("Authorization"))
	}
	var actions []string
	for _, e := range f.rec.events {
		if e.Type != event.AdminConsoleAction {
			t.Errorf("published %s", e.Type)
		}
		actions = append(actions, string(e.Data))
	}
	all := strings.Join(actions, "\n")
	// sign-in, then the two changes (a GET is no action); the reason travels with the close.
	if len(actions) != 3 || !strings.Contains(all, `"action":"sign_in"`) || !strings.Contains(all, `"id":"DELETE /admin/circuit-breakers/key/k1"`) ||
		!strings.Contains(all, `"reason":"fixed"`) || !strings.Contains(all, `"id":"POST /v1/chat/completions"`) {
		t.Errorf("console audit events:\n%s", all)
	}
}

func TestSignOutEndsTheSessionOnTheServer(t *testing.T) {
	f := newFixture(t)
	c := f.signIn(t, "http://127.0.0.1/console/session")
	if w := f.do("GET", "http://127.0.0.1/console/session", "", c); w.Code != http.StatusOK {
		t.Fatalf("session: %d %s", w.Code, w.Body)
	}
	if w := f.do("DELETE", "http://127.0.0.1/console/session", "", c); w.Code != http.StatusNoContent {
		t.Fatalf("sign-out: %d %s", w.Code, w.Body)
	}
	// The old cookie, replayed, is refused: the session's key is revoked.
	for _, target := range []string{"/console/session", "/console/api/admin/api-keys"} {
		if w := f.do("GET", "http://127.0.0.1"+target, "", c); w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "Session expired") {
			t.Errorf("GET %s after sign-out: %d %s", target, w.Code, w.Body)
		}
	}
	hash, _ := apikey.Hash(c.Value)
	if k, err := f.store.KeyByHash(context.Background(), hash); err != nil || k.RevokedAt == nil {
		t.Errorf("the session key after sign-out: %+v, %v", k, err)
	}
	// Only session keys can be signed out: the admin key as a cookie is no session.
	if w := f.do("DELETE", "http://127.0.0.1/console/session", "", &http.Cookie{Name: console.CookieName, Value: f.admin}); w.Code != http.StatusUnauthorized {
		t.Errorf("signing out an admin key's cookie: %d", w.Code)
	}
}

func TestCrossOriginChangesAreRefused(t *testing.T) {
	f := newFixture(t)
	c := f.signIn(t, "http://127.0.0.1/console/session")
	req := httptest.NewRequest("POST", "http://127.0.0.1/console/api/admin/api-keys", strings.NewReader(`{"name":"x"}`))
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.AddCookie(c)
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	if w.Code != http.StatusForbidden || len(f.rec.calls) != 0 {
		t.Errorf("a cross-site POST: %d, %d calls reached the API", w.Code, len(f.rec.calls))
	}
}

func TestPagesCarryAStrictPolicy(t *testing.T) {
	f := newFixture(t)
	for _, target := range []string{"/console/", "/console/assets/app.js", "/console/assets/style.css", "/console/session", "/console/nope"} {
		w := f.do("GET", "http://127.0.0.1"+target, "", nil)
		h := w.Header()
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", target, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "http") {
			t.Errorf("%s: CSP %q allows inline code or another origin", target, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", target, h)
		}
	}
	if w := f.do("GET", "http://127.0.0.1/console", "", nil); w.Code != http.StatusFound || w.Header().Get("Location") != "console/" {
		t.Errorf("GET /console: %d Location %q, want a relative redirect (it keeps a stage prefix)", w.Code, w.Header().Get("Location"))
	}
	// Nothing inline that the policy would block, and nothing from elsewhere.
	html, err := os.ReadFile("assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAll(html, -1) {
		if !strings.Contains(string(tag), ` src="assets/`) {
			t.Errorf("index.html has an inline script: %s", tag)
		}
	}
	for _, bad := range []*regexp.Regexp{regexp.MustCompile(`\sstyle=`), regexp.MustCompile(`\son[a-z]+=`), regexp.MustCompile(`(src|href)="(https?:)?//`), regexp.MustCompile(`<style`)} {
		if m := bad.Find(html); m != nil {
			t.Errorf("index.html has %q, which the policy forbids", m)
		}
	}
}
