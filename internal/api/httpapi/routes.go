package httpapi

import (
	"net/http"
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
