package httpapi

import (
	"net/http"
	"path"
	"reflect"
	"slices"
	"strings"

	"github.com/secureai-gateway/gateway/internal/fault"
)

// Routes serves h on patterns ("METHOD /path", ServeMux syntax) and answers everything else in
// the surface's envelope (Table). A Lambda function serves exactly its routes this way, so a
// template mistake cannot turn a stray method or path into a billed completion; the local server
// mounts the same handler on the same paths.
func Routes(render Render, h http.Handler, patterns ...string) http.Handler {
	return WithRequestID(Table(render, Handled(h, patterns...)...))
}

// Paths are the paths of patterns, without their methods, each once: where the local server
// mounts a Routes handler.
func Paths(patterns ...string) []string {
	var out []string
	for _, p := range patterns {
		path := p
		if _, after, hasMethod := strings.Cut(p, " "); hasMethod {
			path = after
		}
		if !slices.Contains(out, path) {
			out = append(out, path)
		}
	}
	return out
}

// NotFound answers any request with a 404 in the surface's envelope.
func NotFound(render Render) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		render(w, r, fault.New(fault.NotFound, "Not found", "no route "+r.Method+" "+fault.Clip(r.URL.Path, 256)).WithCode("not_found"))
	}
}

// Canonical answers a request whose path is not in canonical form — an empty segment (//v1/…),
// a . or .. segment, however the URL encodes it (%2e%2e) — with a 404 in the envelope
// renderFor(cleaned) names, cleaned being the path as it would be made canonical; other requests
// go to next. A ServeMux would answer such a path with a redirect to the cleaned one: an HTML
// body outside every envelope, and for a path of ../ segments a Location outside the API
// (/console/assets/../../../etc/passwd → /etc/passwd). Nothing is served at a path that is not
// the route's own, so no check that looks at the path can be stepped around through one.
func Canonical(renderFor func(cleaned string) Render, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if !strings.HasPrefix(p, "/") { // "*" (OPTIONS *), answered by net/http itself
			next.ServeHTTP(w, r)
			return
		}
		cleaned := CleanPath(p)
		if cleaned == p {
			next.ServeHTTP(w, r)
			return
		}
		renderFor(cleaned)(w, r, fault.New(fault.NotFound, "Not found", "no route "+r.Method+" "+fault.Clip(p, 256)+
			": the path is not in canonical form (an empty, . or .. segment)").WithCode("not_found"))
	})
}

// CleanPath is p in canonical form, as a ServeMux cleans it: no empty, . or .. segment, a
// trailing slash kept.
func CleanPath(p string) string {
	cleaned := path.Clean(p)
	if strings.HasSuffix(p, "/") && cleaned != "/" {
		cleaned += "/"
	}
	return cleaned
}

// redirectType is the type of the handler a ServeMux answers with when it redirects.
var redirectType = reflect.TypeOf(http.RedirectHandler("/", http.StatusTemporaryRedirect))

// NoRedirect serves mux, but answers a request that mux would redirect — /v1 to /v1/, /receipts
// to /receipts/ (a path that matches only with a slash added), or an unclean path to its cleaned
// form — with a 404 in the envelope renderFor(path) names, instead of the redirect's HTML body. No
// handler of the gateway is a redirect handler, so the type tells mux's own redirects apart.
func NoRedirect(mux *http.ServeMux, renderFor func(path string) Render) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, _ := mux.Handler(r); reflect.TypeOf(h) == redirectType {
			renderFor(CleanPath(r.URL.Path))(w, r, fault.New(fault.NotFound, "Not found", "no route "+r.Method+" "+fault.Clip(r.URL.Path, 256)).WithCode("not_found"))
			return
		}
		mux.ServeHTTP(w, r)
	})
}
