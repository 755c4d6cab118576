// Package gateway assembles the endpoints from their dependencies. The local server mounts every
// route on one mux; each Lambda function mounts the one handler it serves. Both get the same
// http.Handlers from here.
package gateway

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/classicapi"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/httpapi"
	"github.com/secureai-gateway/gateway/internal/idempotency"
	"github.com/secureai-gateway/gateway/internal/openaiapi"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/anthropic"
	"github.com/secureai-gateway/gateway/internal/provider/bedrock"
	"github.com/secureai-gateway/gateway/internal/provider/gemini"
	"github.com/secureai-gateway/gateway/internal/provider/openai"
)

// Factories are the provider wire types the gateway speaks.
func Factories() map[string]catalog.Factory {
	return map[string]catalog.Factory{
		"openai":    openai.New,
		"anthropic": anthropic.New,
		"gemini":    gemini.New,
		"bedrock":   bedrock.New,
	}
}

// DefaultMaxBody is the request body limit when Deps leaves it unset (SECUREAI_MAX_BODY_BYTES).
const DefaultMaxBody = 8 << 20

// Deps are what the endpoints need.
type Deps struct {
	Catalog    *catalog.Catalog
	Credential func(name string) string // resolves a provider's api_key_env
	HTTPClient *http.Client             // shared by every provider; nil: a pooled default
	Keys       identity.KeyFinder
	Log        *slog.Logger
	Budget     time.Duration // the request deadline when the platform sets none
	MaxBody    int64         // larger bodies get a 413; 0: DefaultMaxBody
	Engine     chain.Engine
	// Idempotency keeps Idempotency-Key records; nil: requests carrying the header are refused.
	Idempotency idempotency.Store
	// Observer hears every failover and how every completion ended (billing, events, audit);
	// nil: nobody listens.
	Observer completion.Observer
}

// Gateway holds the assembled endpoints.
type Gateway struct {
	deps    Deps
	Router  *catalog.Router
	openai  *openaiapi.Handler
	classic *classicapi.Handler
}

// New builds the providers and endpoints once; nothing here runs per request.
func New(d Deps) (*Gateway, error) {
	if d.HTTPClient == nil {
		d.HTTPClient = provider.NewHTTPClient()
	}
	if d.MaxBody <= 0 {
		d.MaxBody = DefaultMaxBody
	}
	router, err := catalog.NewRouter(d.Catalog, Factories(), d.Credential, d.HTTPClient)
	if err != nil {
		return nil, err
	}
	guard := newGuard(d)
	svc := &completion.Service{Router: router, Engine: d.Engine, Settings: chain.ProjectSettings, Observer: d.Observer}
	return &Gateway{
		deps:    d,
		Router:  router,
		openai:  &openaiapi.Handler{Completions: svc, Models: router, MaxBody: d.MaxBody, Log: d.Log, Idempotency: guard},
		classic: &classicapi.Handler{Completions: svc, MaxBody: d.MaxBody, Log: d.Log, Idempotency: guard},
	}, nil
}

// endpoint wraps h with what every authenticated route needs.
func (g *Gateway) endpoint(render httpapi.Render, h http.HandlerFunc) http.Handler {
	return httpapi.WithRequestID(httpapi.WithBudget(g.deps.Budget, httpapi.Authenticate(g.deps.Keys, render, h)))
}

// OpenAIChat serves POST /v1/chat/completions.
func (g *Gateway) OpenAIChat() http.Handler { return g.endpoint(openaiapi.Render, g.openai.Chat) }

// OpenAIModels serves GET /v1/models.
func (g *Gateway) OpenAIModels() http.Handler {
	return g.endpoint(openaiapi.Render, g.openai.ListModels)
}

// Mux mounts every route, for the local server. Unknown routes and wrong methods answer in the
// classic envelope and carry an X-Request-Id like every other response.
func (g *Gateway) Mux() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/chat/completions", g.OpenAIChat())
	mux.Handle("GET /v1/models", g.OpenAIModels())
	mux.Handle("POST /chat/completions", g.ClassicChat())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		classicapi.Render(w, r, fault.New(fault.NotFound, "Not found", "no route "+r.Method+" "+r.URL.Path).WithCode("not_found"))
	})
	return httpapi.WithRequestID(mux)
}
