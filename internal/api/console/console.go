// Package console serves the web console: a few static pages (embedded, no build step, nothing
// fetched at run time) and, under /console/api/, the gateway's own API routes called in-process
// on the operator's behalf. The browser never holds an API key: signing in trades an admin key
// for a session that only the console accepts (session.go), and every change sent through the
// console is an audit event.
package console

import (
	"embed"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/fault"

	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
)

//go:embed assets
var assets embed.FS

// Path is where the console is mounted: Path and everything under Path+"/" (ServeMux patterns,
// no method: it answers its own).
const Path = "/console"

// DefaultSessionTTL is how long a console session lasts when Config.SessionTTL is unset: a
// working day, after which the operator signs in again.
const DefaultSessionTTL = 8 * time.Hour

// Config is what the console needs.
type Config struct {
	// API serves the gateway's routes (/admin/…, /usage, /policy-check, /v1/chat/completions):
	// the console's calls go there as the session (httpapi.ActingAs), as a client's would but
	// with no credential a client could send.
	API http.Handler
	// Keys looks up the key an operator signs in with and the session a cookie names.
	Keys identity.KeyFinder
	// Sessions opens sessions, checks their operator's key on every use, and revokes them.
	Sessions *keyadmin.Service
	// Events receives one admin:console_action event per action; nil discards them.
	Events     event.Publisher
	Log        *slog.Logger
	SessionTTL time.Duration
	// SignInFailures failed sign-ins from one client address within SignInWindow refuse that
	// address's sign-ins until the window ends; zero: DefaultSignInFailures, DefaultSignInWindow.
	SignInFailures int
	SignInWindow   time.Duration
	// TrustedProxies are the addresses of the reverse proxies in front of the gateway: from them
	// alone X-Forwarded-Proto says whether the browser used HTTPS (the cookie's Secure flag), and
	// X-Forwarded-For who the client is (the sign-in throttle's address). Empty: both headers are
	// ignored, and only a loopback Host goes without Secure.
	TrustedProxies []netip.Prefix
	Now            func() time.Time
}

// Console is the console's handler.
type Console struct {
	c        Config
	throttle *throttle
}

// New returns the console's handler, mounted at Path.
func New(c Config) *Console {
	if c.SessionTTL <= 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Events == nil {
		c.Events = event.Discard{}
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.SignInFailures <= 0 {
		c.SignInFailures = DefaultSignInFailures
	}
	if c.SignInWindow <= 0 {
		c.SignInWindow = DefaultSignInWindow
	}
	return &Console{c: c, throttle: newThrottle(c.SignInFailures, c.SignInWindow)}
}

// Handler returns every console route behind its security headers and Go's cross-origin
// protection (a state-changing request from another origin is refused before any handler runs).
func (cn *Console) Handler() http.Handler {
	static, _ := fs.Sub(assets, "assets") // the embedded tree always has it
	mux := http.NewServeMux()
	// A relative Location keeps an API Gateway stage prefix (/prod/console → /prod/console/);
	// http.Redirect would make it absolute from the path the function sees, which has none.
	mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "console/")
		w.WriteHeader(http.StatusFound)
	})
	mux.Handle("GET /console/{$}", serveFile(static, "index.html"))
	mux.Handle("GET /console/assets/{name}", serveAsset(static))
	mux.HandleFunc("POST /console/session", cn.signIn)
	mux.HandleFunc("GET /console/session", cn.whoAmI)
	mux.HandleFunc("DELETE /console/session", cn.signOut)
	mux.HandleFunc("/console/api/", cn.proxy)
	mux.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, http.StatusNotFound, "Not found", "no console route "+r.Method+" "+r.URL.Path)
	})
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, http.StatusForbidden, "Access denied",
			"cross-origin request refused: the console takes changes only from its own pages")
	}))
	// A path not in canonical form (or one only a slash added would match: /console/api) is a
	// 404 here too, not the ServeMux's redirect (for ../ segments, a Location outside the console).
	render := func(string) httpapi.Render { return renderFault }
	// One access line per console request, as every API route writes; a route the proxy calls in
	// process writes its own beside it.
	return httpapi.AccessLog(cn.c.Log, securityHeaders(httpapi.Canonical(render, cop.Handler(httpapi.NoRedirect(mux, render)))))
}

// renderFault answers err in the console's envelope.
func renderFault(w http.ResponseWriter, r *http.Request, err error) {
	f := fault.From(err)
	writeError(w, r, httpapi.Status(f), f.Title, f.Message)
}

// ContentSecurityPolicy allows the console's own files and nothing else: no inline script or
// style, no other origin, no framing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// serveAsset serves the file of fsys the last segment of the path names, and answers anything
// else — a folder, a name that is not there, a dot segment however encoded — with a JSON 404: no
// listing, no redirect (a FileServer redirects a folder or …/index.html to its canonical name).
func serveAsset(fsys fs.FS) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		notFound := func() {
			writeError(w, r, http.StatusNotFound, "Not found", "no console file "+fault.Clip(name, 256))
		}
		if !fs.ValidPath(name) || strings.Contains(name, "/") {
			notFound()
			return
		}
		f, err := fsys.Open(name)
		if err != nil {
			notFound()
			return
		}
		defer f.Close()
		info, err := f.Stat()
		content, seekable := f.(io.ReadSeeker)
		if err != nil || info.IsDir() || !seekable {
			notFound()
			return
		}
		http.ServeContent(w, r, name, info.ModTime(), content)
	})
}

func serveFile(fsys fs.FS, name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, fsys, name)
	})
}
