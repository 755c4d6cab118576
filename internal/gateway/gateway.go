// Package gateway assembles the endpoints from their dependencies. Each endpoint can be built
// alone (NewModels, NewOpenAIChat, NewClassicChat), so a Lambda function builds only what its
// route needs; New builds them all on one router for the local server's Mux. Both get the same
// http.Handlers from the same small builders.
package gateway

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/classicapi"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/httpapi"
	"github.com/secureai-gateway/gateway/internal/idempotency"
	"github.com/secureai-gateway/gateway/internal/identity"
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

// Deps are what the endpoints need; each builder takes only its part (models reads neither
// HTTPClient, Engine nor Idempotency).
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

func (d Deps) withDefaults() Deps {
	if d.MaxBody <= 0 {
		d.MaxBody = DefaultMaxBody
	}
	return d
}

// NewModels builds GET /v1/models. Listing needs the catalog and the credentials only: no
// provider is built and no idempotency guard.
func NewModels(d Deps) http.Handler {
	d = d.withDefaults()
	return models(d, catalog.NewListing(d.Catalog, d.Credential))
}

// NewOpenAIChat builds POST /v1/chat/completions.
func NewOpenAIChat(d Deps) (http.Handler, error) {
	d = d.withDefaults()
	svc, _, err := completions(d)
	if err != nil {
		return nil, err
	}
	return openAIChat(d, svc, newGuard(d)), nil
}

// NewClassicChat builds POST /chat/completions.
func NewClassicChat(d Deps) (http.Handler, error) {
	d = d.withDefaults()
	svc, _, err := completions(d)
	if err != nil {
		return nil, err
	}
	return classicChat(d, svc, newGuard(d)), nil
}

// Gateway holds every endpoint, built on one router, for the local server.
type Gateway struct {
	models, openAIChat, classicChat http.Handler
}

// New builds the providers and every endpoint once; nothing here runs per request.
func New(d Deps) (*Gateway, error) {
	d = d.withDefaults()
	svc, router, err := completions(d)
	if err != nil {
		return nil, err
	}
	guard := newGuard(d)
	return &Gateway{models: models(d, router), openAIChat: openAIChat(d, svc, guard), classicChat: classicChat(d, svc, guard)}, nil
}

// Mux mounts every route, for the local server. Unknown routes and wrong methods answer in the
// classic envelope and carry an X-Request-Id like every other response.
func (g *Gateway) Mux() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/chat/completions", g.openAIChat)
	mux.Handle("GET /v1/models", g.models)
	mux.Handle("POST /chat/completions", g.classicChat)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		classicapi.Render(w, r, fault.New(fault.NotFound, "Not found", "no route "+r.Method+" "+r.URL.Path).WithCode("not_found"))
	})
	return httpapi.WithRequestID(mux)
}

// completions builds one provider per configured provider and the completion service on them.
func completions(d Deps) (*completion.Service, *catalog.Router, error) {
	client := d.HTTPClient
	if client == nil {
		client = provider.NewHTTPClient()
	}
	router, err := catalog.NewRouter(d.Catalog, Factories(), d.Credential, client)
	if err != nil {
		return nil, nil, err
	}
	return &completion.Service{Router: router, Engine: d.Engine, Settings: chain.ProjectSettings, Observer: d.Observer}, router, nil
}

func models(d Deps, list openaiapi.ModelLister) http.Handler {
	h := &openaiapi.Handler{Models: list, MaxBody: d.MaxBody, Log: d.Log}
	return endpoint(d, openaiapi.Render, h.ListModels)
}

func openAIChat(d Deps, svc *completion.Service, guard *idempotency.Guard) http.Handler {
	h := &openaiapi.Handler{Completions: svc, MaxBody: d.MaxBody, Log: d.Log, Idempotency: guard}
	return endpoint(d, openaiapi.Render, h.Chat)
}

// endpoint wraps h with what every authenticated route needs.
func endpoint(d Deps, render httpapi.Render, h http.HandlerFunc) http.Handler {
	return httpapi.WithRequestID(httpapi.WithBudget(d.Budget, httpapi.Authenticate(d.Keys, render, h)))
}
