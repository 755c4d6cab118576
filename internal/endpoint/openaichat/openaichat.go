// Package openaichat is the endpoint POST /v1/chat/completions, the OpenAI-compatible surface.
package openaichat

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

var routes = []string{"POST /v1/chat/completions"}

// Endpoint is POST /v1/chat/completions.
var Endpoint = gateway.Endpoint{Function: "OpenAIChatFunction", Routes: routes, Render: openaiapi.Render, Build: New,
	Needs: gateway.ChatNeeds}

// New builds the endpoint.
func New(d gateway.Deps) (http.Handler, error) {
	return gateway.ChatRoute(d, openaiapi.Render, routes[0], func(svc *completion.Service, d gateway.Deps) http.HandlerFunc {
		return (&openaiapi.Handler{Completions: svc, MaxBody: d.MaxBody, Log: d.Log}).Chat
	})
}
