// Package identity carries who is calling through a request's context: the authenticated API key
// and the request id. It is domain, not HTTP plumbing — limits, billing, events and audit read the
// caller from here, whatever edge (the local server, a Lambda, a test) admitted the request.
package identity

import (
	"context"

	"github.com/secureai-gateway/gateway/internal/apikey"
)

type ctxKey struct{}

// Caller is who is calling: the request's id and, once authenticated, its key. A context carries
// one Caller, whatever learnt which part of it, so that an edge learning the key as the request
// passes its layers can fill in the value it already carries (internal/api/httpapi keeps one per
// request) instead of copying the request to add a value per layer.
type Caller interface {
	RequestID() string
	Key() *apikey.Key
}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// CallerOf returns the caller ctx carries; nil outside a request.
func CallerOf(ctx context.Context) Caller {
	c, _ := ctx.Value(ctxKey{}).(Caller)
	return c
}

// WithKey returns ctx carrying the authenticated key (and the request id it carried).
func WithKey(ctx context.Context, key *apikey.Key) context.Context {
	return WithCaller(ctx, &fixed{id: RequestID(ctx), key: key})
}

// Key returns the authenticated key; nil when the request was not authenticated.
func Key(ctx context.Context) *apikey.Key {
	if c := CallerOf(ctx); c != nil {
		return c.Key()
	}
	return nil
}

// WithRequestID returns ctx carrying the request's id (and the key it carried).
func WithRequestID(ctx context.Context, id string) context.Context {
	return WithCaller(ctx, &fixed{id: id, key: Key(ctx)})
}

// RequestID returns the id of the request being served; "" outside one.
func RequestID(ctx context.Context) string {
	if c := CallerOf(ctx); c != nil {
		return c.RequestID()
	}
	return ""
}

// fixed is a Caller that does not change: what WithKey and WithRequestID add.
type fixed struct {
	id  string
	key *apikey.Key
}

func (f *fixed) RequestID() string { return f.id }
func (f *fixed) Key() *apikey.Key  { return f.key }

// KeyFinder looks a key up by the SHA-256 of its secret: the one question authentication asks of
// a key store (or of a cache in front of one).
type KeyFinder interface {
	KeyByHash(ctx context.Context, hash string) (*apikey.Key, error)
}
