package adminapi

import (
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/reqstats"
)

// RequestStats serves GET /admin/stats/requests?range=hour|day|week: requests over time
// (reqstats.Read).
type RequestStats struct {
	Store reqstats.Store
	Now   func() time.Time // nil: time.Now
}

// Routes is the table of the request-stats route.
func (s RequestStats) Routes() []httpapi.Route {
	return []httpapi.Route{{Pattern: "GET /admin/stats/requests", Handle: s.read}}
}

func (s RequestStats) read(w http.ResponseWriter, r *http.Request) error {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	rep, err := reqstats.Read(r.Context(), s.Store, r.URL.Query().Get("range"), now())
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, rep)
	return nil
}
