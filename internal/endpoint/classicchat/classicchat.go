// Package classicchat is the endpoint POST /chat/completions, the classic surface.
package classicchat

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

var routes = []string{"POST /chat/completions"}

// Endpoint is POST /chat/completions.
var Endpoint = gateway.Endpoint{Function: "ClassicChatFunction", Routes: routes, Render: classicapi.Render, Build: New,
	Needs: gateway.ChatNeeds}

// New builds the endpoint.
func New(d gateway.Deps) (http.Handler, error) {
	return gateway.ChatRoute(d, classicapi.Render, routes[0], func(svc *completion.Service, d gateway.Deps) http.HandlerFunc {
		return (&classicapi.Handler{Completions: svc, MaxBody: d.MaxBody, Log: d.Log}).Chat
	})
}
