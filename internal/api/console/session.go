package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/emit"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// A session is a record of the key store opened by keyadmin.Service.StartSession: its secret, a
// session secret (cs-…), is held only in an HttpOnly cookie, and the API refuses it as a bearer
// credential, so the cookie reaches nothing but the console even where cookies do not tell ports
// apart (127.0.0.1 under make run). The console checks it on every request, its operator's key
// included (keyadmin.Service.Operator), and calls the API as the session in process
// (httpapi.ActingAs). Both deployments keep sessions where they keep keys, so a Lambda needs no
// state of its own, and signing out revokes the record: server-side, at once, audited. The
// operator's own key is used once, to open the session, and never stored.

// CookieName is the session cookie.
const CookieName = "secureai_console"

// maxSignInBody bounds the sign-in body: a key and JSON punctuation.
const maxSignInBody = 4 << 10

func (cn *Console) signIn(w http.ResponseWriter, r *http.Request) {
	client, now := cn.clientAddr(r), cn.c.Now()
	if wait, first := cn.throttle.blocked(client, now); wait > 0 {
		if first { // once a window: a flood of refusals is not a flood of audit entries
			cn.signInFailed(r.Context(), client, "sign_in_throttled", "too many failed sign-ins", nil)
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		writeError(w, r, http.StatusTooManyRequests, "Too many failed sign-ins",
			fmt.Sprintf("%d failed sign-ins from this address within %s: try again in %s", cn.throttle.max, cn.throttle.window, wait.Round(time.Second)))
		return
	}
	var in struct {
		Key string `json:"key"`
	}
	if err := httpapi.DecodeJSON(w, r, maxSignInBody, &in); err != nil {
		f := fault.From(err)
		writeError(w, r, httpapi.Status(f), f.Title, f.Message+`: send {"key": "sk-…"} as JSON`)
		return
	}
	// refused answers a sign-in the key itself failed: counted toward the address's throttle,
	// logged and audited (never with the key tried; with its id when it names a key).
	refused := func(status int, title, message string, known *apikey.Key) {
		cn.throttle.failed(client, now)
		cn.signInFailed(r.Context(), client, "sign_in_failed", message, known)
		writeError(w, r, status, title, message)
	}
	hash, err := apikey.Hash(strings.TrimSpace(in.Key))
	if err != nil {
		refused(http.StatusUnauthorized, "Invalid API key", "that is not an API key: expected sk- followed by 64 lowercase hex digits", nil)
		return
	}
	operator, err := cn.c.Keys.KeyByHash(r.Context(), hash)
	if errors.Is(err, apikey.ErrNotFound) {
		refused(http.StatusUnauthorized, "Invalid API key", "unknown API key", nil)
		return
	}
	if err != nil {
		cn.fail(w, r, "sign-in", err)
		return
	}
	ctx := identity.WithKey(r.Context(), operator) // opening the session is the operator's act
	created, err := cn.c.Sessions.StartSession(ctx, operator, now.Add(cn.c.SessionTTL).Truncate(time.Second))
	if f := fault.From(err); err != nil && f.K != fault.Internal { // a revoked, expired or normal key is refused here, saying which
		refused(httpapi.Status(f), f.Title, f.Message, operator)
		return
	}
	if err != nil {
		cn.fail(w, r, "sign-in", err)
		return
	}
	expires := *created.Key.ExpiresAt
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: created.Secret, Expires: expires, MaxAge: max(1, int(expires.Sub(now).Seconds())),
		HttpOnly: true, Secure: cn.secure(r), SameSite: http.SameSiteStrictMode,
		// No Path: the cookie's path is the console's own directory, whatever stage prefix the
		// browser sees (/console locally, /<stage>/console behind API Gateway).
	})
	cn.audit(ctx, "sign_in", event.Target{Kind: "console_session", ID: created.Key.ID}, nil)
	writeJSON(w, http.StatusOK, sessionJSON{Name: operator.Name, ExpiresAt: expires})
}

type sessionJSON struct {
	Name      string    `json:"name"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Why a request has no session: the page sends the operator back to the sign-in form on either.
var (
	errNotSignedIn = fault.New(fault.Unauthenticated, "Not signed in", "sign in with an admin API key")
	errNoSession   = fault.New(fault.Unauthenticated, "Session expired", "your session is not valid; sign in again")
	errSignedOut   = fault.New(fault.Unauthenticated, "Session expired", "you have signed out; sign in again")
)

// record returns the session record the request's cookie names, whether or not it may still act.
func (cn *Console) record(r *http.Request) (*apikey.Key, error) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return nil, errNotSignedIn
	}
	hash, err := apikey.SessionHash(c.Value)
	if err != nil {
		return nil, errNoSession
	}
	k, err := cn.c.Keys.KeyByHash(r.Context(), hash)
	if errors.Is(err, apikey.ErrNotFound) {
		return nil, errNoSession
	}
	return k, err
}

// session returns the signed-in session and the key of the operator it acts for; a fault of
// kind Unauthenticated when the session has ended, or its operator's key has (revoked, expired,
// or no longer an admin key).
func (cn *Console) session(r *http.Request) (session, operator *apikey.Key, err error) {
	k, err := cn.record(r)
	if err != nil {
		return nil, nil, err
	}
	op, err := cn.c.Sessions.Operator(r.Context(), k)
	if err != nil {
		return nil, nil, err
	}
	httpapi.NoteKey(r.Context(), k.ID) // the console's access line names the session
	return k, op, nil
}

func (cn *Console) whoAmI(w http.ResponseWriter, r *http.Request) {
	k, op, err := cn.session(r)
	if err != nil {
		cn.fail(w, r, "session", err)
		return
	}
	writeJSON(w, http.StatusOK, sessionJSON{Name: op.Name, ExpiresAt: *k.ExpiresAt})
}

func (cn *Console) signOut(w http.ResponseWriter, r *http.Request) {
	err := cn.endSession(r)
	if err == nil || fault.KindOf(err) == fault.Unauthenticated {
		// The browser forgets the cookie once no session is left behind it; after a failure it
		// keeps it, to sign out again.
		http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", MaxAge: -1, HttpOnly: true, Secure: cn.secure(r), SameSite: http.SameSiteStrictMode})
	}
	if err != nil {
		cn.fail(w, r, "sign-out", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// endSession revokes the session the request's cookie names, by its id: whatever it is called,
// and even when its operator's key has ended it already (so that this key, made an admin again,
// does not bring it back).
func (cn *Console) endSession(r *http.Request) error {
	k, err := cn.record(r)
	if err != nil {
		return err
	}
	if k.RevokedAt != nil {
		return errSignedOut
	}
	ctx := identity.WithKey(r.Context(), k)
	if _, err := cn.c.Sessions.Revoke(ctx, k.ID); err != nil {
		return err
	}
	cn.audit(ctx, "sign_out", event.Target{Kind: "console_session", ID: k.ID}, nil)
	return nil
}

// proxy sends /console/api/<route> to the API as <route>, authenticated as the session (or, for
// the playground, as the key the operator typed there, sent in the Authorization header — never
// in the URL). A change (any method but GET and HEAD) is audited as a console action, with the
// operator's reason when the page sent one (?reason=, e.g. for closing a breaker).
func (cn *Console) proxy(w http.ResponseWriter, r *http.Request) {
	k, _, err := cn.session(r)
	if err != nil {
		cn.fail(w, r, "session", err)
		return
	}
	out := r.Clone(r.Context())
	out.URL.Path = "/" + strings.TrimPrefix(r.URL.Path, "/console/api/")
	out.URL.RawPath = ""
	out.RequestURI = out.URL.RequestURI()
	out.Header.Del("Cookie")
	if out.Header.Get("Authorization") == "" {
		out = httpapi.ActingAs(out, k)
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

// signInFailed logs and audits a refused sign-in from client: action sign_in_failed (the key did
// not open a session: why, and the id of the key when it names one) or sign_in_throttled.
func (cn *Console) signInFailed(ctx context.Context, client, action, why string, known *apikey.Key) {
	attrs := []any{"request_id", identity.RequestID(ctx), "client", client, "reason", why}
	after := map[string]any{"client": client, "reason": why}
	target := event.Target{Kind: "console_session"}
	if known != nil {
		attrs = append(attrs, "key_id", known.ID)
		after["apiKeyId"], target.ID = known.ID, known.ID
	}
	cn.c.Log.WarnContext(ctx, "console sign-in refused", attrs...)
	cn.audit(ctx, action, target, after)
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

// fail answers err: a fault the operator is told about (a refused sign-in, a session that has
// ended) as it is; anything else as the store's failure, without its detail (logged instead).
func (cn *Console) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	if f := fault.From(err); f.K != fault.Internal {
		writeError(w, r, httpapi.Status(f), f.Title, f.Message)
		return
	}
	cn.c.Log.ErrorContext(r.Context(), "console "+what+" failed", "err", err)
	w.Header().Set("Retry-After", "5")
	writeError(w, r, http.StatusServiceUnavailable, "Service unavailable", "the gateway's store did not answer; try again in a moment")
}

// clientAddr is the address the request came from: the key of the sign-in throttle and what a
// refused sign-in's audit entry names. It is the connection's peer (or the API Gateway event's
// source), unless that is a trusted proxy: then the last address of X-Forwarded-For that is not
// one of the trusted proxies (each proxy appends the peer it saw; what a client wrote itself is
// further left, and never read past an untrusted address).
func (cn *Console) clientAddr(r *http.Request) string {
	peer, ok := cn.trustedPeer(r)
	if !ok {
		if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			return host
		}
		return r.RemoteAddr
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // a malformed hop: nothing left of it can be trusted
		}
		client = a.Unmap()
		if !cn.trusted(client) {
			break
		}
	}
	return client.String()
}

// trustedPeer returns the connection's peer address and whether it is a trusted proxy.
func (cn *Console) trustedPeer(r *http.Request) (netip.Addr, bool) {
	if len(cn.c.TrustedProxies) == 0 {
		return netip.Addr{}, false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), cn.trusted(ap.Addr().Unmap())
}

func (cn *Console) trusted(a netip.Addr) bool {
	for _, p := range cn.c.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// secure reports whether the session cookie gets the Secure flag: when a trusted proxy says the
// browser used HTTPS (X-Forwarded-Proto: https; http when it says http), else everywhere but on a
// loopback Host — the one place a session cookie may travel over plain HTTP (make run). Nobody
// else's X-Forwarded-Proto is read, so a client cannot talk the flag off.
func (cn *Console) secure(r *http.Request) bool {
	if _, ok := cn.trustedPeer(r); ok {
		proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
		switch strings.ToLower(strings.TrimSpace(proto)) {
		case "https":
			return true
		case "http":
			return false
		}
	}
	return !loopback(r)
}

// loopback reports whether the browser reached the console on a loopback address.
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
