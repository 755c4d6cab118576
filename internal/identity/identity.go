// Package identity carries who is calling through a request's context: the authenticated API key
// and the request id. It is domain, not HTTP plumbing — limits, billing, events and audit read the
// caller from here, whatever edge (the local server, a Lambda, a test) admitted the request.
package identity

import (
	"context"

	"github.com/secureai-gateway/gateway/internal/apikey"
)

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyAPIKey
)

// WithKey returns ctx carrying the authenticated key.
func WithKey(ctx context.Context, key *apikey.Key) context.Context {
	return context.WithValue(ctx, keyAPIKey, key)
}

// Key returns the authenticated key; nil when the request was not authenticated.
func Key(ctx context.Context) *apikey.Key {
	k, _ := ctx.Value(keyAPIKey).(*apikey.Key)
	return k
}

// WithRequestID returns ctx carrying the request's id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, keyRequestID, id)
}

// RequestID returns the id of the request being served; "" outside one.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(keyRequestID).(string)
	return id
}

// KeyFinder looks a key up by the SHA-256 of its secret: the one question authentication asks of
// a key store (or of a cache in front of one).
type KeyFinder interface {
	KeyByHash(ctx context.Context, hash string) (*apikey.Key, error)
}
