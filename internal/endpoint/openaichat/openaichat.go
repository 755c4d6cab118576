// Package openaichat is the endpoint POST /v1/chat/completions, the OpenAI-compatible surface.
package openaichat

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

var routes = []string{"POST /v1/chat/completions"}

// Endpoint is POST /v1/chat/completions.
var Endpoint = gateway.Endpoint{Function: "OpenAIChatFunction", Routes: routes, Render: openaiapi.Render, Build: New,
	Needs: gateway.ChatNeeds}

// New builds the endpoint.
func New(d gateway.Deps) (http.Handler, error) {
	d = d.WithDefaults()
	svc, guard, err := gateway.ChatOf(d)
	if err != nil {
		return nil, err
	}
	h := &openaiapi.Handler{Completions: svc, MaxBody: d.MaxBody, Log: d.Log}
	chat := httpapi.Idempotent(guard, openaiapi.Render, routes[0], d.MaxBody, http.HandlerFunc(h.Chat))
	return httpapi.Routes(openaiapi.Render, gateway.Traced(d, routes[0], gateway.Authenticated(d, openaiapi.Render, chat.ServeHTTP)), routes...), nil
}
