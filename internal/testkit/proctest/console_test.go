package proctest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/api/console"
	"github.com/secureai-gateway/gateway/internal/apikey"
)

// consoleCall sends one request to the console with the session cookie, as a page (or any other
// page on 127.0.0.1, which cookies do not tell apart by port) would, and returns the status and
// body.
func (s *server) consoleCall(cookie *http.Cookie, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, s.Base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.AddCookie(cookie)
	resp, err := (&http.Client{Timeout: clientBound}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// signIn opens a console session with secret and returns its cookie.
func (s *server) signIn(t *testing.T, secret string) *http.Cookie {
	t.Helper()
	resp, err := (&http.Client{Timeout: clientBound}).Post(s.Base+"/console/session", "application/json", strings.NewReader(`{"key":"`+secret+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		if c.Name == console.CookieName && resp.StatusCode == http.StatusOK {
			return c
		}
	}
	t.Fatalf("sign-in: %d %s, no %s cookie", resp.StatusCode, b, console.CookieName)
	return nil
}

// Rule (issue 34 items 1 and 2): under make run the console's cookie is the console's alone and
// lives no longer than the key that opened it. Sent as a bearer credential to the API it is a
// 401; the session cannot extend or rename itself; revoking the operator's key ends the session
// on its next request.
func TestConsoleSessionIsNoAPIKeyAndEndsWithItsOperatorsKey(t *testing.T) {
	bin := build(t)
	admin := apikey.NewSecret()
	s := start(t, bin, t.TempDir(), admin)
	// The operator signs in with an admin key of its own: the bootstrap key, the last admin, could
	// not be revoked.
	status, body, err := s.call(admin, http.MethodPost, "/admin/api-keys", `{"name":"operator","admin":true}`)
	var operator struct {
		Secret string `json:"secret"`
		APIKey struct {
			ID string `json:"id"`
		} `json:"apiKey"`
	}
	if err != nil || status != http.StatusCreated || json.Unmarshal(body, &operator) != nil {
		t.Fatalf("creating the operator's key: %d %s %v", status, body, err)
	}
	cookie := s.signIn(t, operator.Secret)
	if status, body, err := s.consoleCall(cookie, http.MethodGet, "/console/api/admin/api-keys?limit=200", ""); err != nil || status != http.StatusOK {
		t.Fatalf("the session in the console: %d %s %v", status, body, err)
	}

	// The cookie is no bearer credential.
	for _, path := range []string{"/admin/api-keys", "/v1/models"} {
		if status, body, err := s.call(cookie.Value, http.MethodGet, path, ""); err != nil || status != http.StatusUnauthorized {
			t.Errorf("the cookie as Authorization: Bearer on %s: %d %s %v, want 401", path, status, body, err)
		}
	}

	// The session, through the console, cannot change its own expiry or name.
	status, body, err = s.call(admin, http.MethodGet, "/admin/api-keys?name=console%20session&limit=200", "")
	var listed struct {
		APIKeys []struct {
			ID, Prefix string
		} `json:"apiKeys"`
	}
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &listed) != nil {
		t.Fatalf("listing the sessions: %d %s %v", status, body, err)
	}
	var sessionID string
	for _, k := range listed.APIKeys {
		if k.Prefix != "" && strings.HasPrefix(cookie.Value, k.Prefix) {
			sessionID = k.ID
		}
	}
	if sessionID == "" {
		t.Fatalf("no listed key is the session: %s", body)
	}
	for _, tc := range []struct{ field, patch string }{{"expiresAt", `{"expiresAt":null}`}, {"name", `{"name":"my own session"}`}} {
		status, body, err := s.consoleCall(cookie, http.MethodPatch, "/console/api/admin/api-keys/"+sessionID, tc.patch)
		if err != nil || status != http.StatusBadRequest || !strings.Contains(string(body), tc.field) {
			t.Errorf("the session patching its own %s: %d %s %v, want a 400 naming it", tc.field, status, body, err)
		}
	}

	// Revoking the operator's key ends its session (a fresh one: whatever the patches did, this
	// one works until then).
	cookie = s.signIn(t, operator.Secret)
	if status, body, err := s.consoleCall(cookie, http.MethodGet, "/console/session", ""); err != nil || status != http.StatusOK {
		t.Fatalf("the second session: %d %s %v", status, body, err)
	}
	if status, body, err := s.call(admin, http.MethodDelete, "/admin/api-keys/"+operator.APIKey.ID, ""); err != nil || status != http.StatusOK {
		t.Fatalf("revoking the operator's key: %d %s %v", status, body, err)
	}
	for _, path := range []string{"/console/session", "/console/api/admin/api-keys"} {
		if status, body, err := s.consoleCall(cookie, http.MethodGet, path, ""); err != nil || status != http.StatusUnauthorized {
			t.Errorf("GET %s after the operator's key was revoked: %d %s %v, want 401", path, status, body, err)
		}
	}
}
