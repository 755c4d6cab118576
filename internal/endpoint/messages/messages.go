// Package messages is the endpoint POST /v1/messages (and /v1/messages/count_tokens), the
// Anthropic Messages surface for Claude Code and the Anthropic SDKs.
package messages

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/messagesapi"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

var routes = []string{"POST /v1/messages", "POST /v1/messages/count_tokens"}

// Endpoint is POST /v1/messages.
var Endpoint = gateway.Endpoint{Function: "MessagesFunction", Routes: routes, Render: messagesapi.Render, Build: New,
	Needs: gateway.ChatNeeds}

// New builds the endpoint.
func New(d gateway.Deps) (http.Handler, error) {
	d = d.WithDefaults()
	h := &messagesapi.Handler{MaxBody: d.MaxBody, Log: d.Log}
	chat, err := gateway.ChatRoute(d, messagesapi.Render, routes[0], func(svc *completion.Service, _ gateway.Deps) http.HandlerFunc {
		h.Completions = svc
		return httpapi.Serve(messagesapi.Render, h.Messages)
	})
	if err != nil {
		return nil, err
	}
	count := gateway.Reading(d, messagesapi.Render, httpapi.Serve(messagesapi.Render, h.CountTokens))
	table := httpapi.Table(messagesapi.Render, append(httpapi.Handled(chat, routes[0]), httpapi.Handled(count, routes[1])...)...)
	return messagesapi.KeyHeader(httpapi.WithRequestID(table)), nil
}
