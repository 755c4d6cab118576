package httpapi

import (
	"net/http"
	"strings"

	"github.com/secureai-gateway/gateway/internal/fault"
)

// HandlerFunc is the one shape of a handler at the edge (Caddy's AdminHandlerFunc): it writes its
// answer and returns nil, or returns the error that Serve renders, once, in the route's envelope.
// A handler never renders an error itself, so every route answers the same mistake the same way.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Serve adapts h to net/http, rendering the error it returns with render.
func Serve(render Render, h HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			render(w, r, err)
		}
	}
}

// Route is one entry of a route table: a ServeMux pattern with its method ("GET /admin/api-keys")
// and its handler.
type Route struct {
	Pattern string
	Handle  HandlerFunc
}

// Table serves routes and answers everything else in render's envelope: another method on one of
// their paths is a 405 naming the allowed ones in Allow, any other path a 404. It is the one
// place that decides those answers, for every endpoint.
func Table(render Render, routes ...Route) *http.ServeMux {
	mux := http.NewServeMux()
	allowed := map[string][]string{}
	var paths []string
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		mux.HandleFunc(rt.Pattern, Serve(render, rt.Handle))
		if _, seen := allowed[path]; !seen {
			paths = append(paths, path)
		}
		allowed[path] = append(allowed[path], method)
	}
	for _, path := range paths {
		allow := strings.Join(allowed[path], ", ")
		mux.HandleFunc(path, Serve(render, func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("Allow", allow)
			return fault.New(fault.MethodNotAllowed, "Method not allowed", r.Method+" is not allowed on "+fault.Clip(r.URL.Path, 256)+"; use "+allow).WithCode("method_not_allowed")
		}))
	}
	mux.HandleFunc("/", NotFound(render))
	return mux
}

// Patterns are the patterns of routes, in order.
func Patterns(routes []Route) []string {
	out := make([]string, len(routes))
	for i, rt := range routes {
		out[i] = rt.Pattern
	}
	return out
}

// Handled serves every pattern with the one handler h, for a Table.
func Handled(h http.Handler, patterns ...string) []Route {
	serve := func(w http.ResponseWriter, r *http.Request) error {
		h.ServeHTTP(w, r)
		return nil
	}
	out := make([]Route, len(patterns))
	for i, p := range patterns {
		out[i] = Route{Pattern: p, Handle: serve}
	}
	return out
}

// Behind puts the handler of every route behind mw (authentication, the admin check, a request
// budget): Table still answers a wrong path or method before mw runs, and mw's refusals are its
// own.
func Behind(render Render, mw func(http.HandlerFunc) http.Handler, routes []Route) []Route {
	out := make([]Route, len(routes))
	for i, rt := range routes {
		h := mw(Serve(render, rt.Handle))
		out[i] = Route{Pattern: rt.Pattern, Handle: func(w http.ResponseWriter, r *http.Request) error {
			h.ServeHTTP(w, r)
			return nil
		}}
	}
	return out
}
