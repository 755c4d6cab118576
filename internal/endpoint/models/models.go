// Package models is the endpoint GET /v1/models: the catalog's models whose provider has its
// credential. It builds no provider and no idempotency guard.
package models

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

// A model id holds a slash ("openai/gpt-5-nano"): {id...} takes it whether or not the client
// escapes it.
var routes = []string{"GET /v1/models", "GET /v1/models/{id...}"}

// Endpoint is GET /v1/models and GET /v1/models/{id}.
var Endpoint = gateway.Endpoint{Function: "ModelsFunction", Routes: routes, Render: openaiapi.Render, Build: New,
	Needs: gateway.NeedsCredentials}

// New builds the endpoint: listing needs the catalog and the credentials only.
func New(d gateway.Deps) (http.Handler, error) {
	d = d.WithDefaults()
	h := &openaiapi.Handler{Models: catalog.NewListing(d.Catalog, d.Credential), MaxBody: d.MaxBody, Log: d.Log}
	mux := http.NewServeMux()
	mux.HandleFunc(routes[0], h.ListModels)
	mux.HandleFunc(routes[1], h.GetModel)
	return httpapi.Routes(openaiapi.Render, gateway.Reading(d, openaiapi.Render, mux.ServeHTTP), routes...), nil
}
