// Package httpapi is the HTTP edge every endpoint shares: the one handler shape (HandlerFunc,
// returning the error that Table renders once in the route's envelope) and route tables that
// answer 404 and 405 with Allow, request ids, API key authentication and the admin check, body
// limits and the one strict JSON decode, Idempotency-Key replays, the request budget, the status
// each error kind gets (SPEC section 11), and JSON and SSE writing. Endpoints are plain
// http.Handlers that the local server and the Lambda functions mount alike; who is calling travels
// on in package identity, not here.
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// WithRequestID gives every request an id, echoed in X-Request-Id.
func WithRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, q := stateOf(r)
		if q.id != "" { // already given by an outer mux
			next.ServeHTTP(w, r)
			return
		}
		var b [12]byte
		_, _ = rand.Read(b[:])
		var text [len("req_") + 2*len(b)]byte // one allocation for the id, not three
		hex.Encode(text[copy(text[:], "req_"):], b[:])
		q.id = string(text[:])
		w.Header().Set("X-Request-Id", q.id)
		next.ServeHTTP(w, r)
	})
}

// request is what the edge learns about one request as it passes the middleware — its id, its
// key once authenticated, what its access line reports, its share of the body budget — in one
// value that the request's context carries as its identity.Caller. Each layer fills in its part
// of the value the context already carries, so the middleware copies the request once (plus once
// for the budget's deadline) instead of once per layer. A handler that serves another request in
// process on the same context (the console's proxy to the API) shares its value; the innermost
// access line claims it.
type request struct {
	id     string
	key    *apikey.Key
	ticket *bodyTicket // nil: no BodyLimits
	// access is what the access line reports, w what it measures; logged says an AccessLog
	// claimed them.
	access access
	w      StatusWriter
	logged bool
}

func (q *request) RequestID() string { return q.id }
func (q *request) Key() *apikey.Key  { return q.key }

// stateOf returns r's edge state, and r carrying it: a request whose context carries none (or
// only a caller set by other means: a test, the console acting as a session's key) gets a new one
// that starts from that caller.
func stateOf(r *http.Request) (*http.Request, *request) {
	c := identity.CallerOf(r.Context())
	if q, ok := c.(*request); ok {
		return r, q
	}
	q := &request{}
	if c != nil {
		q.id, q.key = c.RequestID(), c.Key()
	}
	return r.WithContext(identity.WithCaller(r.Context(), q)), q
}

// stateIn returns the edge state ctx carries; nil when none.
func stateIn(ctx context.Context) *request {
	q, _ := identity.CallerOf(ctx).(*request)
	return q
}
