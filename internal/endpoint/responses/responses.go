// Package responses is the endpoint POST /v1/responses, the OpenAI Responses surface for Codex
// CLI, the OpenAI Agents SDK and the OpenAI SDKs' responses API.
package responses

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/responsesapi"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

var routes = []string{"POST /v1/responses"}

// Endpoint is POST /v1/responses.
var Endpoint = gateway.Endpoint{Function: "ResponsesFunction", Routes: routes, Render: responsesapi.Render, Build: New,
	Needs: gateway.ChatNeeds}

// New builds the endpoint.
func New(d gateway.Deps) (http.Handler, error) {
	return gateway.ChatRoute(d, responsesapi.Render, routes[0], func(svc *completion.Service, d gateway.Deps) http.HandlerFunc {
		return httpapi.Serve(responsesapi.Render, (&responsesapi.Handler{Completions: svc, MaxBody: d.MaxBody, Log: d.Log}).Responses)
	})
}
