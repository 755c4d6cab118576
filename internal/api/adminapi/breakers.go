package adminapi

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// Breakers serves /admin/circuit-breakers:
//
//	GET    /admin/circuit-breakers                               → list
//	POST   /admin/circuit-breakers                               → open
//	DELETE /admin/circuit-breakers/{subjectType}/{subjectId}     → close
type Breakers struct {
	Breakers *breaker.Breakers
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
	st, err := b.Breakers.OpenRequested(r.Context(), req, actor(r))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"success": true, "circuitBreaker": breaker.ViewOf(st)})
	return nil
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
