// Package console is the web console's endpoint, /console/…: its pages, and for a function of
// its own the routes they call, built from the same endpoints and called in-process.
package console

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/api/console"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/endpoint/admin"
	"github.com/secureai-gateway/gateway/internal/endpoint/messages"
	"github.com/secureai-gateway/gateway/internal/endpoint/models"
	"github.com/secureai-gateway/gateway/internal/endpoint/openaichat"
	"github.com/secureai-gateway/gateway/internal/endpoint/policycheck"
	"github.com/secureai-gateway/gateway/internal/endpoint/responses"
	"github.com/secureai-gateway/gateway/internal/endpoint/usage"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

// Endpoint serves the pages and, in process, the routes they call: the chat playground's
// completions included, so it uses what a chat surface uses (but no Idempotency-Key).
var Endpoint = gateway.Endpoint{Function: "ConsoleFunction", Routes: []string{console.Path, console.Path + "/"}, Render: classicapi.Render,
	Build: New, Needs: gateway.ChatNeeds&^gateway.NeedsIdempotency | gateway.NeedsWebhooks}

// New builds the console for a function of its own: the routes its pages call (the admin API,
// GET /usage, POST /policy-check, GET /v1/models and the playground's POST /v1/chat/completions,
// /v1/messages and /v1/responses) are built here
// from the same endpoints.
func New(d gateway.Deps) (http.Handler, error) {
	// One completion service for the chat and the dry run, as in the local server.
	d, err := gateway.SharedChat(d.WithDefaults())
	if err != nil {
		return nil, err
	}
	api := gateway.NewRouteMux()
	// The console needs every one: its function's environment names their tables.
	if err := gateway.MountBuilt(api, d, false, models.Endpoint, openaichat.Endpoint, messages.Endpoint, responses.Endpoint, policycheck.Endpoint, admin.Endpoint, usage.Endpoint); err != nil {
		return nil, err
	}
	return Over(d, api)
}

// Over builds the console over api, the routes its pages call; an *OffError when the Deps cannot
// mint sessions or audit the console's actions.
func Over(d gateway.Deps, api http.Handler) (http.Handler, error) {
	if d.KeyAdmin == nil || d.Events == nil {
		return nil, &gateway.OffError{Endpoint: "/console", Needs: "the users table (SECUREAI_TABLE_USERS) and the event bus (SECUREAI_EVENT_BUS)"}
	}
	c := console.New(console.Config{API: api, Keys: d.Keys, Sessions: d.KeyAdmin, Events: d.Events, Log: httpapi.Logger(d.Log),
		TrustedProxies: d.TrustedProxies})
	return httpapi.WithRequestID(c.Handler()), nil
}
