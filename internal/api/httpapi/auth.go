package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// Render writes an error in an endpoint's own envelope.
type Render func(w http.ResponseWriter, r *http.Request, err error)

func invalidKey(message string) error {
	return fault.New(fault.Unauthenticated, "Invalid API key", message).WithCode("invalid_api_key")
}

// KeyHash returns the store hash of the API key r carries as "Authorization: Bearer sk-…", or
// the 401 to answer when it carries none (or two, or a malformed one).
func KeyHash(r *http.Request) (string, error) {
	if len(r.Header.Values("Authorization")) > 1 {
		// Proxies and servers disagree on which of two credentials counts.
		return "", invalidKey("send a single Authorization header")
	}
	scheme, secret, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || secret == "" { // auth schemes are case-insensitive
		return "", invalidKey("missing API key: send Authorization: Bearer sk-…")
	}
	hash, err := apikey.Hash(strings.TrimSpace(secret))
	if err != nil {
		return "", invalidKey("malformed API key: expected sk- followed by 64 lowercase hex digits")
	}
	return hash, nil
}

// Authenticate admits requests that carry a usable API key as "Authorization: Bearer sk-…", and
// those the process serves as a key it has authenticated itself (ActingAs). A console session's
// secret is no API key: it is refused as malformed.
func Authenticate(keys identity.KeyFinder, render Render, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := r.Context().Value(actingAs{}).(*apikey.Key)
		if !ok {
			var err error
			if key, err = bearerKey(keys, r); err != nil {
				render(w, r, err)
				return
			}
		}
		r, q := stateOf(r)
		q.key, q.access.keyID = key, key.ID
		next.ServeHTTP(w, r)
	})
}

// bearerKey returns the usable API key r carries, or the error to answer.
func bearerKey(keys identity.KeyFinder, r *http.Request) (*apikey.Key, error) {
	hash, err := KeyHash(r)
	if err != nil {
		return nil, err
	}
	key, err := keys.KeyByHash(r.Context(), hash)
	switch {
	case errors.Is(err, apikey.ErrNotFound):
		return nil, invalidKey("unknown API key")
	case err != nil:
		// An outage of the key store is a 503 to retry; a role that may not read it, a
		// configuration error no retry mends.
		return nil, fault.Dependency("the API key store", "API keys cannot be checked now; try again", err)
	case !key.Usable(time.Now()):
		return nil, invalidKey("API key is revoked or expired")
	}
	return key, nil
}

type actingAs struct{}

// ActingAs returns r to be served as key, which the handler serving r in process has
// authenticated by other means: the console, for the session its cookie names, whose secret the
// API refuses. Authenticate then admits r as key without reading its Authorization header. Only
// code sets it: nothing a client sends reaches a request's context.
func ActingAs(r *http.Request, key *apikey.Key) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), actingAs{}, key))
}

// RequireAdmin admits only admin keys; it goes inside Authenticate, so an anonymous call has
// already had its 401.
func RequireAdmin(render Render, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := identity.Key(r.Context()); k == nil || !k.Admin {
			render(w, r, fault.New(fault.Forbidden, "Access denied", "this route needs an admin API key").WithCode("admin_required"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
