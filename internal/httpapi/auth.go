package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/apierr"
	"github.com/secureai-gateway/gateway/internal/apikey"
)

// KeyFinder looks a key up by the SHA-256 of its secret.
type KeyFinder interface {
	KeyByHash(ctx context.Context, hash string) (*apikey.Key, error)
}

// Render writes a Problem in an endpoint's own envelope.
type Render func(w http.ResponseWriter, r *http.Request, p *apierr.Problem)

// Authenticate admits requests that carry a usable API key as "Authorization: Bearer sk-…".
func Authenticate(keys KeyFinder, render Render, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, secret, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || secret == "" { // auth schemes are case-insensitive
			render(w, r, apierr.InvalidKey("missing API key: send Authorization: Bearer sk-…"))
			return
		}
		hash, err := apikey.Hash(strings.TrimSpace(secret))
		if err != nil {
			render(w, r, apierr.InvalidKey("malformed API key: expected sk- followed by 64 lowercase hex digits"))
			return
		}
		key, err := keys.KeyByHash(r.Context(), hash)
		switch {
		case errors.Is(err, apikey.ErrNotFound):
			render(w, r, apierr.InvalidKey("unknown API key"))
			return
		case err != nil:
			render(w, r, apierr.Internal())
			return
		case !key.Usable(time.Now()):
			render(w, r, apierr.InvalidKey("API key is revoked or expired"))
			return
		}
		next.ServeHTTP(w, r.WithContext(WithKey(r.Context(), key)))
	})
}
