package console

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/emit"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
)

// A session is an admin API key of its own, minted at sign-in with the session's expiry and held
// only in an HttpOnly cookie. The keys table is then the session table in both places (the
// embedded store, DynamoDB): a Lambda needs no state of its own, the expiry is enforced by the
// same authentication every API call passes, and signing out revokes the key — server-side, at
// once, audited. The operator's own key is used once, to mint it, and never stored.

// CookieName is the session cookie.
const CookieName = "secureai_console"

// sessionPrefix starts every session key's name, so the list of keys shows what each is and
// sign-out revokes nothing else.
const sessionPrefix = "console session: "

// maxSignInBody bounds the sign-in body: a key and JSON punctuation.
const maxSignInBody = 4 << 10

func (cn *Console) signIn(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Key string `json:"key"`
	}
	if err := httpapi.DecodeJSON(w, r, maxSignInBody, &in); err != nil {
		f := fault.From(err)
		writeError(w, r, httpapi.Status(f), f.Title, f.Message+`: send {"key": "sk-…"} as JSON`)
		return
	}
	hash, err := apikey.Hash(strings.TrimSpace(in.Key))
	if err != nil {
		writeError(w, r, http.StatusUnauthorized, "Invalid API key", "that is not an API key: expected sk- followed by 64 lowercase hex digits")
		return
	}
	admin, err := cn.c.Keys.KeyByHash(r.Context(), hash)
	switch {
	case errors.Is(err, apikey.ErrNotFound):
		writeError(w, r, http.StatusUnauthorized, "Invalid API key", "unknown API key")
		return
	case err != nil:
		cn.unavailable(w, r, "sign-in", err)
		return
	case !admin.Usable(cn.c.Now()):
		writeError(w, r, http.StatusUnauthorized, "Invalid API key", "this API key is revoked or expired")
		return
	case !admin.Admin:
		writeError(w, r, http.StatusForbidden, "Not an admin key",
			"this API key is a normal key; the console needs an admin API key (cmd/admin create-key -admin, or POST /admin/api-keys with \"admin\": true)")
		return
	}
	ctx := identity.WithKey(r.Context(), admin) // the session key's creation is the admin's act
	expires := cn.c.Now().Add(cn.c.SessionTTL).UTC().Truncate(time.Second)
	in2 := keyadmin.KeyInput{
		Name:      keyadmin.Opt[string]{Set: true, V: sessionPrefix + admin.Name},
		Admin:     keyadmin.Opt[bool]{Set: true, V: true},
		ExpiresAt: keyadmin.Opt[time.Time]{Set: true, V: expires},
		// The console's calls are the operator's, not traffic: no request limits on them.
		DailyLimit:   keyadmin.Opt[int]{Set: true, Null: true},
		MonthlyLimit: keyadmin.Opt[int]{Set: true, Null: true},
		RateLimit:    keyadmin.Opt[keyadmin.RateLimitInput]{Set: true, Null: true},
	}
	if admin.UserID != "" {
		in2.UserID = keyadmin.Opt[string]{Set: true, V: admin.UserID}
	}
	created, err := cn.c.Sessions.Create(ctx, in2)
	if err != nil {
		cn.unavailable(w, r, "sign-in", err)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: created.Secret, Expires: expires, MaxAge: int(cn.c.SessionTTL.Seconds()),
		HttpOnly: true, Secure: !loopback(r), SameSite: http.SameSiteStrictMode,
		// No Path: the cookie's path is the console's own directory, whatever stage prefix the
		// browser sees (/console locally, /<stage>/console behind API Gateway).
	})
	cn.audit(ctx, "sign_in", event.Target{Kind: "console_session", ID: created.Key.ID}, nil)
	writeJSON(w, http.StatusOK, sessionJSON{Name: admin.Name, ExpiresAt: expires})
}

type sessionJSON struct {
	Name      string    `json:"name"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// session returns the signed-in session's key and its secret, or writes the 401 that sends the
// browser back to the sign-in form.
func (cn *Console) session(w http.ResponseWriter, r *http.Request) (*apikey.Key, string, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		writeError(w, r, http.StatusUnauthorized, "Not signed in", "sign in with an admin API key")
		return nil, "", false
	}
	hash, err := apikey.Hash(c.Value)
	if err != nil {
		writeError(w, r, http.StatusUnauthorized, "Session expired", "your session is not valid; sign in again")
		return nil, "", false
	}
	k, err := cn.c.Keys.KeyByHash(r.Context(), hash)
	switch {
	case errors.Is(err, apikey.ErrNotFound):
		writeError(w, r, http.StatusUnauthorized, "Session expired", "your session is not valid; sign in again")
		return nil, "", false
	case err != nil:
		cn.unavailable(w, r, "session", err)
		return nil, "", false
	case !k.Usable(cn.c.Now()) || !k.Admin || !strings.HasPrefix(k.Name, sessionPrefix):
		writeError(w, r, http.StatusUnauthorized, "Session expired", "your session has ended; sign in again")
		return nil, "", false
	}
	return k, c.Value, true
}

func (cn *Console) whoAmI(w http.ResponseWriter, r *http.Request) {
	k, _, ok := cn.session(w, r)
	if !ok {
		return
	}
	var exp time.Time
	if k.ExpiresAt != nil {
		exp = *k.ExpiresAt
	}
	writeJSON(w, http.StatusOK, sessionJSON{Name: strings.TrimPrefix(k.Name, sessionPrefix), ExpiresAt: exp})
}

func (cn *Console) signOut(w http.ResponseWriter, r *http.Request) {
	// The browser forgets the cookie whatever happens next.
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", MaxAge: -1, HttpOnly: true, Secure: !loopback(r), SameSite: http.SameSiteStrictMode})
	k, _, ok := cn.session(w, r)
	if !ok {
		return
	}
	ctx := identity.WithKey(r.Context(), k)
	if _, err := cn.c.Sessions.Revoke(ctx, k.ID); err != nil {
		cn.unavailable(w, r, "sign-out", err)
		return
	}
	cn.audit(ctx, "sign_out", event.Target{Kind: "console_session", ID: k.ID}, nil)
	w.WriteHeader(http.StatusNoContent)
}

// proxy sends /console/api/<route> to the API as <route>, authenticated as the session (or, for
// the playground, as the key the operator typed there, sent in the Authorization header — never
// in the URL). A change (any method but GET and HEAD) is audited as a console action, with the
// operator's reason when the page sent one (?reason=, e.g. for closing a breaker).
func (cn *Console) proxy(w http.ResponseWriter, r *http.Request) {
	k, secret, ok := cn.session(w, r)
	if !ok {
		return
	}
	out := r.Clone(r.Context())
	out.URL.Path = "/" + strings.TrimPrefix(r.URL.Path, "/console/api/")
	out.URL.RawPath = ""
	out.RequestURI = out.URL.RequestURI()
	out.Header.Del("Cookie")
	if out.Header.Get("Authorization") == "" {
		out.Header.Set("Authorization", "Bearer "+secret)
	}
	change := r.Method != http.MethodGet && r.Method != http.MethodHead
	if !change {
		cn.c.API.ServeHTTP(w, out)
		return
	}
	rec := &httpapi.StatusWriter{ResponseWriter: w}
	cn.c.API.ServeHTTP(rec, out)
	ctx := identity.WithKey(r.Context(), k)
	if identity.RequestID(ctx) == "" { // the API's handler gave the request its id
		ctx = identity.WithRequestID(ctx, w.Header().Get("X-Request-Id"))
	}
	after := map[string]any{"status": rec.Status()}
	if reason := r.URL.Query().Get("reason"); reason != "" { // e.g. why a breaker was closed
		after["reason"] = reason
	}
	cn.audit(ctx, "request", event.Target{Kind: "console", ID: r.Method + " " + out.URL.Path}, after)
}

// audit publishes one admin:console_action event, its subject the key acting in ctx.
func (cn *Console) audit(ctx context.Context, action string, target event.Target, after any) {
	now := cn.c.Now()
	ev, err := event.AdminEvent(event.AdminConsoleAction, event.Admin{Action: action, Target: target, Subject: emit.Subject(ctx), Time: now}, nil, after, now)
	if err != nil {
		cn.c.Log.ErrorContext(ctx, "console action not audited", "action", action, "err", err)
		return
	}
	cn.c.Events.Publish(ctx, ev)
}

// unavailable answers a store failure without its detail (logged instead).
func (cn *Console) unavailable(w http.ResponseWriter, r *http.Request, what string, err error) {
	cn.c.Log.ErrorContext(r.Context(), "console "+what+" failed", "err", err)
	w.Header().Set("Retry-After", "5")
	writeError(w, r, http.StatusServiceUnavailable, "Service unavailable", "the gateway's store did not answer; try again in a moment")
}

// loopback reports whether the browser reached the console on a loopback address, the one place
// a session cookie may travel over plain HTTP (make run).
func loopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers in the classic envelope the admin API uses, so the pages read one shape.
func writeError(w http.ResponseWriter, r *http.Request, status int, title, message string) {
	writeJSON(w, status, map[string]any{"success": false, "error": title, "message": message, "request_id": identity.RequestID(r.Context())})
}
