// Package classicchat is the endpoint POST /chat/completions, the classic surface.
package classicchat

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

var routes = []string{"POST /chat/completions"}

// Endpoint is POST /chat/completions.
var Endpoint = gateway.Endpoint{Function: "ClassicChatFunction", Routes: routes, Render: classicapi.Render, Build: New,
	Needs: gateway.ChatNeeds}

// New builds the endpoint.
func New(d gateway.Deps) (http.Handler, error) {
	d = d.WithDefaults()
	svc, guard, err := gateway.ChatOf(d)
	if err != nil {
		return nil, err
	}
	h := &classicapi.Handler{Completions: svc, MaxBody: d.MaxBody, Log: d.Log}
	chat := httpapi.Idempotent(guard, classicapi.Render, routes[0], d.MaxBody, http.HandlerFunc(h.Chat))
	return httpapi.Routes(classicapi.Render, gateway.Traced(d, routes[0], gateway.Authenticated(d, classicapi.Render, chat.ServeHTTP)), routes...), nil
}
