// Package httpapi is the HTTP plumbing every endpoint shares: request ids, API key
// authentication, body limits, the request budget, JSON and SSE writing. Endpoints are plain
// http.Handlers that the local server and the Lambda functions mount alike.
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"github.com/secureai-gateway/gateway/internal/apikey"
)

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyAPIKey
)

// RequestID returns the id of the request being served.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(keyRequestID).(string)
	return id
}

// Key returns the authenticated API key; nil outside Authenticate.
func Key(ctx context.Context) *apikey.Key {
	k, _ := ctx.Value(keyAPIKey).(*apikey.Key)
	return k
}

// WithKey returns ctx carrying key (for tests and in-process callers).
func WithKey(ctx context.Context, key *apikey.Key) context.Context {
	return context.WithValue(ctx, keyAPIKey, key)
}

// WithRequestID gives every request an id, echoed in X-Request-Id.
func WithRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if RequestID(r.Context()) != "" { // already given by an outer mux
			next.ServeHTTP(w, r)
			return
		}
		var b [12]byte
		_, _ = rand.Read(b[:])
		var text [len("req_") + 2*len(b)]byte // one allocation for the id, not three
		hex.Encode(text[copy(text[:], "req_"):], b[:])
		id := string(text[:])
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyRequestID, id)))
	})
}
