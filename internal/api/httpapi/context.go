// Package httpapi is the HTTP edge every endpoint shares: the one handler shape (HandlerFunc,
// returning the error that Table renders once in the route's envelope) and route tables that
// answer 404 and 405 with Allow, request ids, API key authentication and the admin check, body
// limits and the one strict JSON decode, Idempotency-Key replays, the request budget, the status
// each error kind gets (SPEC section 11), and JSON and SSE writing. Endpoints are plain
// http.Handlers that the local server and the Lambda functions mount alike; who is calling travels
// on in package identity, not here.
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
