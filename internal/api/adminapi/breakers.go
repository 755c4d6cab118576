package adminapi

import (
	"context"
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
)

// Breakers serves /admin/circuit-breakers:
//
//	GET    /admin/circuit-breakers                               → list
//	POST   /admin/circuit-breakers                               → open
//	DELETE /admin/circuit-breakers/{subjectType}/{subjectId}     → close
type Breakers struct {
	Breakers *breaker.Breakers
	// Keys finds the key or user a breaker is opened for: a subject that does not exist is a 404,
	// not a breaker nobody it could contain. nil: not checked.
	Keys *keyadmin.Service
}

// Routes is the table of the breaker routes.
func (b Breakers) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "GET /admin/circuit-breakers", Handle: b.list},
		{Pattern: "POST /admin/circuit-breakers", Handle: b.open},
		{Pattern: "DELETE /admin/circuit-breakers/{subjectType}/{subjectId}", Handle: b.close},
	}
}

// list answers {"success":true,"circuitBreakers":[…]}.
func (b Breakers) list(w http.ResponseWriter, r *http.Request) error {
	all, err := b.Breakers.List(r.Context())
	if err != nil {
		return err
	}
	out := make([]breaker.View, len(all))
	for i, st := range all {
		out[i] = breaker.ViewOf(st)
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"success": true, "circuitBreakers": out})
	return nil
}

// open answers 201 {"success":true,"circuitBreaker":{…}}.
func (b Breakers) open(w http.ResponseWriter, r *http.Request) error {
	var req breaker.OpenRequest
	if err := httpapi.DecodeJSON(w, r, httpapi.MaxAdminBody, &req); err != nil {
		return err
	}
	var exists func(context.Context, breaker.Subject) error
	if b.Keys != nil {
		exists = b.exists
	}
	st, err := b.Breakers.OpenRequested(r.Context(), req, actor(r), exists)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"success": true, "circuitBreaker": breaker.ViewOf(st)})
	return nil
}

// exists answers a fault.NotFound when the key or user s names does not exist. A user exists
// once it has a billing record, which every key's user gets when the key is created or moved.
func (b Breakers) exists(ctx context.Context, s breaker.Subject) error {
	var err error
	if s.Kind == breaker.KindKey {
		_, err = b.Keys.Get(ctx, s.ID)
	} else {
		_, err = b.Keys.User(ctx, s.ID)
	}
	return err
}

// close answers {"success":true,"circuitBreaker":{…}} with the breaker it closed, 404 when none
// is open.
func (b Breakers) close(w http.ResponseWriter, r *http.Request) error {
	st, err := b.Breakers.CloseRequested(r.Context(), r.PathValue("subjectType"), r.PathValue("subjectId"), actor(r))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"success": true, "circuitBreaker": breaker.ViewOf(st)})
	return nil
}

// actor names the admin key acting, for the breaker's record.
func actor(r *http.Request) string {
	if k := identity.Key(r.Context()); k != nil {
		return "admin:" + k.ID
	}
	return "admin"
}
