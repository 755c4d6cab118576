package gateway

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/console"
	"github.com/secureai-gateway/gateway/internal/httpapi"
)

// NewConsole builds the web console at /console/… for a function of its own: the routes its
// pages call (the admin API, GET /usage, POST /policy-check, GET /v1/models and
// POST /v1/chat/completions) are built here from the same builders, and called in-process.
func NewConsole(d Deps) (http.Handler, error) {
	d = d.withDefaults()
	svc, router, err := completions(d)
	if err != nil {
		return nil, err
	}
	api := newRouteMux()
	mount(api, models(d, router), modelsRoutes)
	mount(api, openAIChat(d, svc, newGuard(d)), openAIChatRoutes)
	mount(api, policyCheck(d, svc), policyCheckRoutes)
	// The console needs both: its function's environment names their tables.
	if err := mountBuilt(api, d, false, builder{NewAdmin, nil}, builder{NewUsage, usageRoutes}); err != nil {
		return nil, err
	}
	return consoleOver(d, api)
}

// consoleOver builds the console over api; an *OffError when the Deps cannot mint sessions or
// audit the console's actions.
func consoleOver(d Deps, api http.Handler) (http.Handler, error) {
	if d.KeyAdmin == nil || d.Events == nil {
		return nil, &OffError{"/console", "the users table (SECUREAI_TABLE_USERS) and the event bus (SECUREAI_EVENT_BUS)"}
	}
	c := console.New(console.Config{API: api, Keys: d.Keys, Sessions: d.KeyAdmin, Events: d.Events, Log: d.Log})
	return httpapi.WithRequestID(c.Handler()), nil
}
