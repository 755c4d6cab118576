package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/secureai-gateway/gateway/internal/fault"
)

// Routes serves h on patterns ("METHOD /path", ServeMux syntax) and answers everything else in
// the surface's envelope: another method on one of those paths is a 405 naming the allowed ones
// in Allow, any other path a 404. A Lambda function serves exactly its routes this way, so a
// template mistake cannot turn a stray method or path into a billed completion; the local server
// mounts the same handler on the same paths.
func Routes(render Render, h http.Handler, patterns ...string) http.Handler {
	mux := http.NewServeMux()
	allowed := map[string][]string{}
	var paths []string
	for _, p := range patterns {
		method, path, _ := strings.Cut(p, " ")
		mux.Handle(p, h)
		if _, seen := allowed[path]; !seen {
			paths = append(paths, path)
		}
		allowed[path] = append(allowed[path], method)
	}
	for _, path := range paths {
		allow := strings.Join(allowed[path], ", ")
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			render(w, r, fault.New(fault.MethodNotAllowed, "Method not allowed", r.Method+" is not allowed on "+r.URL.Path+"; use "+allow).WithCode("method_not_allowed"))
		})
	}
	mux.HandleFunc("/", NotFound(render))
	return WithRequestID(mux)
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
