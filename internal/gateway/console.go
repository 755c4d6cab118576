package gateway

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/console"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
)

// NewConsole builds the web console at /console/… for a function of its own: the routes its
// pages call (the admin API, GET /usage, POST /policy-check, GET /v1/models and
// POST /v1/chat/completions) are built here from the same builders, and called in-process.
func NewConsole(d Deps) (http.Handler, error) {
	d = d.withDefaults()
	// One completion service for the chat and the dry run, as in the local server.
	c, err := d.chatParts()
	if err != nil {
		return nil, err
	}
	d.chat = c
	api := newRouteMux()
	// The console needs every one: its function's environment names their tables.
	if err := mountBuilt(api, d, false, Models, OpenAIChat, PolicyCheck, Admin, Usage); err != nil {
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
