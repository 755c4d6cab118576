package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/console"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
)

// recorder keeps what the console published, and what reached the API behind it with the key it
// was authenticated as.
type recorder struct {
	mu     sync.Mutex
	events []event.Event
	calls  []*http.Request
	as     []*apikey.Key
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
	r.as = append(r.as, identity.Key(req.Context()))
	r.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

type fixture struct {
	h             http.Handler
	rec           *recorder
	store         *boltstore.Store
	admin, normal string // secrets
	adminID       string
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
		secret, id *string
		admin      bool
	}{{&f.admin, &f.adminID, true}, {&f.normal, new(string), false}} {
		*k.secret, *k.id = apikey.NewSecret(), apikey.NewID()
		hash, _ := apikey.Hash(*k.secret)
		if err := store.CreateKey(context.Background(), &apikey.Key{ID: *k.id, Hash: hash, Prefix: apikey.Prefix(*k.secret),
			Name: "ops", UserID: "ops", Admin: k.admin, CreatedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
	}
	// The API behind the console authenticates as the gateway's does.
	api := httpapi.Authenticate(store, func(w http.ResponseWriter, _ *http.Request, err error) {
		w.WriteHeader(httpapi.Status(fault.From(err)))
	}, f.rec)
	f.h = console.New(console.Config{API: api, Keys: store, Sessions: &keyadmin.Service{Keys: store, Users: store}, Events: f.rec}).Handler()
	return f
}

// session returns the session record c names.
func (f *fixture) session(t *testing.T, c *http.Cookie) *apikey.Key {
	t.Helper()
	hash, err := apikey.SessionHash(c.Value)
	if err != nil {
		t.Fatalf("the cookie holds no session secret: %v", err)
	}
	k, err := f.store.KeyByHash(context.Background(), hash)
	if err != nil {
		t.Fatal(err)
	}
	return k
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
	if w := f.do("POST", "http://127.0.0.1/console/api/v1/chat/completions", "{}", c, "Authorization", "Bearer "+f.normal); w.Code != http.StatusAccepted {
		t.Fatalf("POST as another key: %d %s", w.Code, w.Body)
	}
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	if len(f.rec.calls) != 3 {
		t.Fatalf("%d calls reached the API", len(f.rec.calls))
	}
	get, del, play := f.rec.calls[0], f.rec.calls[1], f.rec.calls[2]
	// Issue 34 item 2: the console's calls are the session's with no credential on them: neither
	// the cookie nor its secret as a bearer token.
	if get.URL.Path != "/admin/api-keys" || get.URL.RawQuery != "limit=5" || get.Header.Get("Authorization") != "" || get.Header.Get("Cookie") != "" {
		t.Errorf("the API got %s ?%s Authorization %q Cookie %q", get.URL.Path, get.URL.RawQuery, get.Header.Get("Authorization"), get.Header.Get("Cookie"))
	}
	for i, as := range f.rec.as[:2] {
		if as == nil || as.SessionOf != f.adminID || !as.Admin {
			t.Errorf("call %d authenticated as %+v, want the admin's session", i, as)
		}
	}
	if del.URL.Path != "/admin/circuit-breakers/key/k1" || play.Header.Get("Authorization") != "Bearer "+f.normal || f.rec.as[2].IsSession() || f.rec.as[2].Admin {
		t.Errorf("the API got %s, and the playground's call as %q (%+v)", del.URL.Path, play.Header.Get("Authorization"), f.rec.as[2])
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
	if k := f.session(t, c); k.RevokedAt == nil {
		t.Errorf("the session after sign-out: %+v", k)
	}
	// Only session keys can be signed out: the admin key as a cookie is no session.
	if w := f.do("DELETE", "http://127.0.0.1/console/session", "", &http.Cookie{Name: console.CookieName, Value: f.admin}); w.Code != http.StatusUnauthorized {
		t.Errorf("signing out an admin key's cookie: %d", w.Code)
	}
}

// Issue 34 item 2: the cookie holds a session secret, which is no API key: it does not even sign
// in to the console.
func TestTheCookieIsNoAPIKey(t *testing.T) {
	f := newFixture(t)
	c := f.signIn(t, "http://127.0.0.1/console/session")
	if _, err := apikey.Hash(c.Value); err == nil {
		t.Errorf("the cookie %q is an API key", c.Value)
	}
	if w := f.do("POST", "http://127.0.0.1/console/session", `{"key":"`+c.Value+`"}`, nil); w.Code != http.StatusUnauthorized {
		t.Errorf("signing in with the cookie's value: %d %s, want 401", w.Code, w.Body)
	}
}

// Issue 34 item 1: a session ends, on its next request, when the key that opened it is revoked,
// no longer an admin key, or expired; nothing then reaches the API.
func TestASessionEndsWithItsOperatorsKey(t *testing.T) {
	past := time.Now().Add(-time.Second)
	for _, tc := range []struct {
		name string
		end  func(k *apikey.Key)
	}{
		{"revoked", func(k *apikey.Key) { k.RevokedAt = &past }},
		{"demoted", func(k *apikey.Key) { k.Admin = false }},
		{"expired", func(k *apikey.Key) { k.ExpiresAt = &past }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			c := f.signIn(t, "http://127.0.0.1/console/session")
			if w := f.do("GET", "http://127.0.0.1/console/session", "", c); w.Code != http.StatusOK {
				t.Fatalf("the session before: %d %s", w.Code, w.Body)
			}
			if _, err := f.store.UpdateKey(context.Background(), f.adminID, func(k *apikey.Key) error { tc.end(k); return nil }); err != nil {
				t.Fatal(err)
			}
			for _, target := range []string{"/console/session", "/console/api/admin/api-keys"} {
				if w := f.do("GET", "http://127.0.0.1"+target, "", c); w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "Session expired") {
					t.Errorf("GET %s: %d %s, want 401 Session expired", target, w.Code, w.Body)
				}
			}
			if len(f.rec.calls) != 0 {
				t.Errorf("%d calls reached the API", len(f.rec.calls))
			}
		})
	}
}

// Issue 34 item 1: sign-out revokes the session by its id, whatever it is called, and also when
// its operator's key has already ended it (so that key, made an admin again, cannot revive it).
func TestSignOutRevokesTheSessionWhateverItIsCalled(t *testing.T) {
	f := newFixture(t)
	renamed := f.signIn(t, "http://127.0.0.1/console/session")
	if _, err := f.store.UpdateKey(context.Background(), f.session(t, renamed).ID, func(k *apikey.Key) error { k.Name = "not a session"; return nil }); err != nil {
		t.Fatal(err)
	}
	orphaned := f.signIn(t, "http://127.0.0.1/console/session")
	if _, err := f.store.UpdateKey(context.Background(), f.adminID, func(k *apikey.Key) error { k.Admin = false; return nil }); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*http.Cookie{"renamed": renamed, "its operator demoted": orphaned} {
		if w := f.do("DELETE", "http://127.0.0.1/console/session", "", c); w.Code != http.StatusNoContent {
			t.Errorf("signing out a session %s: %d %s, want 204", name, w.Code, w.Body)
		}
		if k := f.session(t, c); k.RevokedAt == nil {
			t.Errorf("a session %s, signed out, is not revoked", name)
		}
	}
}

// updatesFail is a key store whose writes fail, as a full disk's would.
type updatesFail struct{ *boltstore.Store }

func (updatesFail) UpdateKey(context.Context, string, func(*apikey.Key) error) (*apikey.Key, error) {
	return nil, errors.New("disk full")
}

// Issue 34 item 6: a sign-out the store did not record says so, and leaves the browser its
// cookie, to sign out again; the session still works meanwhile.
func TestAFailedSignOutKeepsTheCookie(t *testing.T) {
	f := newFixture(t)
	c := f.signIn(t, "http://127.0.0.1/console/session")
	f.h = console.New(console.Config{API: f.rec, Keys: f.store, Sessions: &keyadmin.Service{Keys: updatesFail{f.store}, Users: f.store}, Events: f.rec}).Handler()
	w := f.do("DELETE", "http://127.0.0.1/console/session", "", c)
	if w.Code != http.StatusServiceUnavailable || len(w.Result().Cookies()) != 0 {
		t.Errorf("a sign-out the store refused: %d, cookies %v; want 503 and the cookie kept", w.Code, w.Result().Cookies())
	}
	if w := f.do("GET", "http://127.0.0.1/console/session", "", c); w.Code != http.StatusOK {
		t.Errorf("the session after a failed sign-out: %d %s", w.Code, w.Body)
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
	// Issue 34 item 10: the refusal is in the envelope every console answer takes.
	if !isEnvelope(w, "cross-origin") {
		t.Errorf("a cross-site POST: %s %q, want the JSON envelope saying why", w.Header().Get("Content-Type"), w.Body)
	}
}

// isEnvelope reports whether w is a JSON error in the classic envelope whose message says want.
func isEnvelope(w *httptest.ResponseRecorder, want string) bool {
	var body struct {
		Success *bool  `json:"success"`
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	err := json.Unmarshal(w.Body.Bytes(), &body)
	return err == nil && w.Header().Get("Content-Type") == "application/json" && body.Success != nil && !*body.Success &&
		body.Error != "" && strings.Contains(body.Message, want)
}

// Issue 34 item 10: the console serves its own files and nothing else; any other name under
// assets/ — a folder, a dot segment however encoded, a file that is not there — is a JSON 404,
// never a redirect or a listing.
func TestAssetsAreItsFilesOnly(t *testing.T) {
	f := newFixture(t)
	for _, target := range []string{"/console/assets/app.js", "/console/assets/style.css", "/console/assets/index.html"} {
		if w := f.do("GET", "http://127.0.0.1"+target, "", nil); w.Code != http.StatusOK || w.Body.Len() == 0 {
			t.Errorf("GET %s: %d", target, w.Code)
		}
	}
	for _, target := range []string{"/console/assets/", "/console/assets/%2e%2e", "/console/assets/..%2findex.html", "/console/assets/nope.js",
		"/console/assets/app.js/", "/console/assets/../../../etc/passwd", "/console/assets/.", "/console/assets/index.html/x", "/console/api", "//console/"} {
		w := f.do("GET", "http://127.0.0.1"+target, "", nil)
		if w.Code != http.StatusNotFound || w.Header().Get("Location") != "" || !isEnvelope(w, "") {
			t.Errorf("GET %s: %d Location %q %s %q, want a 404 in the JSON envelope", target, w.Code, w.Header().Get("Location"), w.Header().Get("Content-Type"), w.Body)
		}
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

// Issue 34 item 5: every console request writes an access line (with the session's key id once
// signed in); each failed sign-in is logged and audited with the client's address — never the key
// tried — and after 5 failures within a minute an address is refused (429, Retry-After) whatever
// key it sends, once audited, until the window ends; another address is not.
func TestFailedSignInsAreAuditedAndThrottled(t *testing.T) {
	f := newFixture(t)
	var logs syncBuffer
	clock := time.Now()
	f.h = console.New(console.Config{API: f.rec, Keys: f.store, Sessions: &keyadmin.Service{Keys: f.store, Users: f.store}, Events: f.rec,
		Log: slog.New(slog.NewJSONHandler(&logs, nil)), Now: func() time.Time { return clock }}).Handler()
	from := func(addr, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "http://127.0.0.1/console/session", strings.NewReader(body))
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.RemoteAddr = addr
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, req)
		return w
	}
	wrong := apikey.NewSecret()
	for i, body := range []string{`{"key":"` + wrong + `"}`, `{"key":"sk-nope"}`, `{"key":"` + f.normal + `"}`, `{"key":"` + wrong + `"}`, `{"key":"` + wrong + `"}`} {
		if w := from("198.51.100.7:4000", body); w.Code/100 != 4 || w.Code == http.StatusTooManyRequests {
			t.Fatalf("failed sign-in %d: %d %s", i+1, w.Code, w.Body)
		}
	}
	for range 2 {
		w := from("198.51.100.7:4001", `{"key":"`+f.admin+`"}`)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || len(w.Result().Cookies()) != 0 {
			t.Errorf("the right key after 5 failures: %d Retry-After %q %s, want 429", w.Code, w.Header().Get("Retry-After"), w.Body)
		}
	}
	if w := from("203.0.113.9:5000", `{"key":"`+f.admin+`"}`); w.Code != http.StatusOK {
		t.Errorf("another address: %d %s", w.Code, w.Body)
	}
	clock = clock.Add(time.Minute)
	if w := from("198.51.100.7:4002", `{"key":"`+f.admin+`"}`); w.Code != http.StatusOK {
		t.Errorf("after the window: %d %s", w.Code, w.Body)
	}

	f.rec.mu.Lock()
	var failed, throttled int
	for _, e := range f.rec.events {
		data := string(e.Data)
		switch {
		case strings.Contains(data, `"action":"sign_in_failed"`):
			failed++
			if !strings.Contains(data, `"client":"198.51.100.7"`) || strings.Contains(data, wrong[3:]) {
				t.Errorf("a failed sign-in's event %s: want the client, never the key tried", data)
			}
		case strings.Contains(data, `"action":"sign_in_throttled"`):
			throttled++
		}
	}
	f.rec.mu.Unlock()
	if failed != 5 || throttled != 1 {
		t.Errorf("%d sign_in_failed and %d sign_in_throttled events, want 5 and 1", failed, throttled)
	}
	out := logs.String()
	if n := strings.Count(out, `"msg":"console sign-in refused"`); n != 6 || strings.Contains(out, wrong[3:]) {
		t.Errorf("%d refusal lines (want 6), key tried in the log: %v", n, strings.Contains(out, wrong[3:]))
	}
	if n := strings.Count(out, `"msg":"access"`); n != 9 || strings.Count(out, `"status":429`) != 2 {
		t.Errorf("%d access lines, want one per request (9) with the two 429s:\n%s", n, out)
	}
}

// Issue 34 item 5: every console request writes an access line — pages, files, the session
// routes and the proxy (whose API route writes its own) — naming the session's key once signed in.
func TestEveryConsoleRequestIsLogged(t *testing.T) {
	f := newFixture(t)
	var logs syncBuffer
	f.h = console.New(console.Config{API: f.rec, Keys: f.store, Sessions: &keyadmin.Service{Keys: f.store, Users: f.store}, Events: f.rec,
		Log: slog.New(slog.NewJSONHandler(&logs, nil))}).Handler()
	c := f.signIn(t, "http://127.0.0.1/console/session")
	for _, target := range []string{"/console/", "/console/assets/app.js", "/console/session", "/console/api/usage", "/console/nope"} {
		f.do("GET", "http://127.0.0.1"+target, "", c)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "access" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 6 {
		t.Fatalf("%d access lines, want 6:\n%s", len(lines), logs.String())
	}
	session := f.session(t, c).ID
	for i, want := range []struct {
		route string
		key   any
	}{{"POST /console/session", nil}, {"GET /console/", nil}, {"GET /console/assets/app.js", nil},
		{"GET /console/session", session}, {"GET /console/api/usage", session}, {"GET /console/nope", nil}} {
		if lines[i]["route"] != want.route || lines[i]["key_id"] != want.key {
			t.Errorf("line %d: %v, want route %q key %v", i, lines[i], want.route, want.key)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Issue 34 item 7: behind a TLS proxy that passes Host: 127.0.0.1:8080 the cookie is Secure when a
// trusted proxy says the browser used HTTPS; X-Forwarded-Proto from anyone else is ignored, so a
// client can neither talk the flag off nor on. X-Forwarded-For from a trusted proxy names the
// client the sign-in throttle counts.
func TestTheSecureFlagBelievesOnlyATrustedProxy(t *testing.T) {
	f := newFixture(t)
	f.h = console.New(console.Config{API: f.rec, Keys: f.store, Sessions: &keyadmin.Service{Keys: f.store, Users: f.store}, Events: f.rec,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}}).Handler()
	signIn := func(target, peer string, header ...string) (int, *http.Cookie) {
		req := httptest.NewRequest("POST", target, strings.NewReader(`{"key":"`+f.admin+`"}`))
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.RemoteAddr = peer
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, req)
		for _, c := range w.Result().Cookies() {
			if c.Name == console.CookieName {
				return w.Code, c
			}
		}
		return w.Code, nil
	}
	for _, tc := range []struct {
		name, target, peer, proto string
		secure                    bool
	}{
		{"a trusted proxy says https", "http://127.0.0.1:8080/console/session", "127.0.0.1:51000", "https", true},
		{"a trusted proxy says https, a list", "http://127.0.0.1:8080/console/session", "10.1.2.3:51000", "https, http", true},
		{"a trusted proxy says http", "http://gateway.internal/console/session", "10.1.2.3:51000", "http", false},
		{"a trusted proxy says nothing", "http://127.0.0.1:8080/console/session", "10.1.2.3:51000", "", false},
		{"anyone else says https", "http://127.0.0.1:8080/console/session", "192.0.2.50:51000", "https", false},
		{"anyone else says http", "https://gateway.example/console/session", "192.0.2.50:51000", "http", true},
	} {
		status, c := signIn(tc.target, tc.peer, "X-Forwarded-Proto", tc.proto)
		if status != http.StatusOK || c == nil || c.Secure != tc.secure {
			t.Errorf("%s: %d cookie %+v, want Secure=%v", tc.name, status, c, tc.secure)
		}
	}

	// Behind the trusted proxy, each client is throttled apart; a client's own X-Forwarded-For
	// names nobody else.
	wrong := `{"key":"` + apikey.NewSecret() + `"}`
	try := func(peer, xff, body string) int {
		req := httptest.NewRequest("POST", "http://127.0.0.1:8080/console/session", strings.NewReader(body))
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("X-Forwarded-For", xff)
		req.RemoteAddr = peer
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, req)
		return w.Code
	}
	for range 5 {
		try("10.0.0.1:1", "198.51.100.1, 10.0.0.2", wrong) // the client, then an inner trusted proxy
	}
	if got := try("10.0.0.1:1", "198.51.100.1", `{"key":"`+f.admin+`"}`); got != http.StatusTooManyRequests {
		t.Errorf("the throttled client behind the proxy: %d, want 429", got)
	}
	if got := try("10.0.0.1:1", "198.51.100.2", `{"key":"`+f.admin+`"}`); got != http.StatusOK {
		t.Errorf("another client behind the proxy: %d, want 200", got)
	}
	for range 5 {
		try("192.0.2.60:1", "198.51.100.3", wrong) // not a proxy: its X-Forwarded-For is its own word
	}
	if got := try("192.0.2.60:1", "198.51.100.4", `{"key":"`+f.admin+`"}`); got != http.StatusTooManyRequests {
		t.Errorf("an untrusted peer changing its X-Forwarded-For: %d, want 429 (it is throttled by its own address)", got)
	}
	if got := try("10.0.0.1:1", "198.51.100.3", `{"key":"`+f.admin+`"}`); got != http.StatusOK {
		t.Errorf("the client an untrusted peer named: %d, want 200", got)
	}
}
