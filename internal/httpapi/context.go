// Package httpapi is the HTTP edge every endpoint shares: request ids, API key authentication,
// body limits, the request budget, the status each error kind gets (SPEC section 11), and JSON and
// SSE writing. Endpoints are plain http.Handlers that the local server and the Lambda functions
// mount alike; who is calling travels on in package identity, not here.
package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"github.com/secureai-gateway/gateway/internal/identity"
)

// WithRequestID gives every request an id, echoed in X-Request-Id.
func WithRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if identity.RequestID(r.Context()) != "" { // already given by an outer mux
			next.ServeHTTP(w, r)
			return
		}
		var b [12]byte
		_, _ = rand.Read(b[:])
		var text [len("req_") + 2*len(b)]byte // one allocation for the id, not three
		hex.Encode(text[copy(text[:], "req_"):], b[:])
		id := string(text[:])
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(identity.WithRequestID(r.Context(), id)))
	})
}
