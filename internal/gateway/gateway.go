// Package gateway assembles the endpoints from their dependencies. Each endpoint can be built
// alone (NewModels, NewOpenAIChat, NewClassicChat), so a Lambda function builds only what its
// route needs; New builds them all on one router for the local server's Mux. Both get the same
// http.Handlers from the same small builders.
package gateway

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/classicapi"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/console"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/httpapi"
	"github.com/secureai-gateway/gateway/internal/idempotency"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/openaiapi"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/anthropic"
	"github.com/secureai-gateway/gateway/internal/provider/bedrock"
	"github.com/secureai-gateway/gateway/internal/provider/gemini"
	"github.com/secureai-gateway/gateway/internal/provider/openai"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/internal/tracing"
	"github.com/secureai-gateway/gateway/internal/webhookadmin"
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
	// Accounts and governance (accounts.go); a nil field turns its feature off.
	Limits  *limits.Limiter // GET /usage's request counts
	Billing *billing.Biller // GET /usage's quota, a dry run's quote
	// Ledger counts, reserves and settles completions and stores their receipts (its Limits and
	// Biller are the deployment's, over the same stores).
	Ledger      *ledger.Ledger
	Breakers    *breaker.Breakers
	Signer      *signing.Signer // signs entitlement tokens, receipts and serves the JWKS
	Receipts    receipt.Store
	KeyAdmin    *keyadmin.Service
	KeyCacheTTL time.Duration // how long a warm function may keep a key it read (told to admins)
	// Webhooks serves /admin/webhooks… and /admin/audit-logs; nil where events are not kept.
	Webhooks *webhookadmin.Handlers
	// ReadBudget bounds each key's requests to the routes that read (models, usage,
	// policy-check, receipts); nil: unbounded.
	ReadBudget *httpapi.KeyBudget
	// SkipUnhealthy is the deployment's default for skip_unhealthy (SECUREAI_SKIP_UNHEALTHY).
	SkipUnhealthy bool
	// Events receives the audit events of the web console's actions; nil: the console is off
	// (every other feature publishes through its own hook above).
	Events event.Publisher
	// Metrics serves GET /metrics, to admin keys only (the local server's Prometheus registry);
	// nil: no such route.
	Metrics http.Handler
	// Tracer traces each chat request and its attempts, and carries the trace to providers;
	// nil: nothing is traced.
	Tracer tracing.Tracer
}

func (d Deps) withDefaults() Deps {
	if d.MaxBody <= 0 {
		d.MaxBody = DefaultMaxBody
	}
	return d
}

// Each endpoint's routes: what its Lambda function answers, and where the local server mounts it.
var (
	// A model id holds a slash ("openai/gpt-5-nano"): {id...} takes it whether or not the client
	// escapes it.
	modelsRoutes      = []string{"GET /v1/models", "GET /v1/models/{id...}"}
	openAIChatRoutes  = []string{"POST /v1/chat/completions"}
	classicChatRoutes = []string{"POST /chat/completions"}
)

// Every New… builder has one shape, func(Deps) (http.Handler, error), so a Lambda's main hands
// it to cloud.Endpoint as it is. A builder whose store the Deps leaves unset answers an *OffError:
// the local server then mounts nothing there, and a function fails its start naming what is
// missing.

// OffError is a builder's answer when the Deps lack what its endpoint needs.
type OffError struct {
	Endpoint string
	Needs    string // what to configure, in the cloud's terms
}

func (e *OffError) Error() string { return e.Endpoint + " is off: it needs " + e.Needs }

// NewModels builds GET /v1/models and GET /v1/models/{id}. Listing needs the catalog and the
// credentials only: no provider is built and no idempotency guard.
func NewModels(d Deps) (http.Handler, error) {
	d = d.withDefaults()
	return models(d, catalog.NewListing(d.Catalog, d.Credential)), nil
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
	mux *routeMux
}

// New builds the providers and every endpoint once; nothing here runs per request.
func New(d Deps) (*Gateway, error) {
	d = d.withDefaults()
	svc, router, err := completions(d)
	if err != nil {
		return nil, err
	}
	guard := newGuard(d)
	g := &Gateway{mux: newRouteMux()}
	mount(g.mux, models(d, router), modelsRoutes)
	mount(g.mux, openAIChat(d, svc, guard), openAIChatRoutes)
	mount(g.mux, classicChat(d, svc, guard), classicChatRoutes)
	mount(g.mux, policyCheck(d, svc), policyCheckRoutes)
	err = mountBuilt(g.mux, d, true, builder{NewAdmin, nil}, builder{NewUsage, usageRoutes},
		builder{NewJWKS, jwksRoutes}, builder{NewReceipts, receiptRoutes}, builder{NewOpenAPI, openAPIRoutes})
	if err != nil {
		return nil, err
	}
	if d.Metrics != nil {
		mount(g.mux, metricsEndpoint(d), metricsRoutes)
	}
	// The console calls this very mux, so it shows every route the local server has.
	overMux := func(d Deps) (http.Handler, error) { return consoleOver(d, g.mux) }
	if err := mountBuilt(g.mux, d, true, builder{overMux, console.Routes}); err != nil {
		return nil, err
	}
	// Unknown routes answer in their surface's envelope: OpenAI's under /v1, classic elsewhere.
	g.mux.Handle("/v1/", httpapi.WithRequestID(httpapi.NotFound(openaiapi.Render)))
	g.mux.Handle("/", httpapi.WithRequestID(httpapi.NotFound(classicapi.Render)))
	return g, nil
}

// routeMux is a mux that remembers the routes mounted on it.
type routeMux struct {
	*http.ServeMux
	routes []string
}

func newRouteMux() *routeMux { return &routeMux{ServeMux: http.NewServeMux()} }

func mount(mux *routeMux, h http.Handler, routes []string) {
	mux.routes = append(mux.routes, routes...)
	for _, p := range httpapi.Paths(routes...) {
		mux.Handle(p, h)
	}
}

// builder builds an endpoint a deployment may leave off (an *OffError), and names its routes
// (nil: the handler names them, as its Routes method).
type builder struct {
	build  func(Deps) (http.Handler, error)
	routes []string
}

// mountBuilt builds and mounts each endpoint on mux. With optional, one the deployment leaves
// off is skipped; without, its *OffError is returned like any other.
func mountBuilt(mux *routeMux, d Deps, optional bool, bs ...builder) error {
	for _, b := range bs {
		h, err := b.build(d)
		var off *OffError
		switch {
		case optional && errors.As(err, &off):
			continue // a feature this deployment leaves off
		case err != nil:
			return err
		}
		routes := b.routes
		if r, ok := h.(interface{ Routes() []string }); ok {
			routes = r.Routes()
		}
		mount(mux, h, routes)
	}
	return nil
}

// Mux mounts every route, for the local server. Every response carries an X-Request-Id, the
// mux's own redirect to a cleaned path included.
func (g *Gateway) Mux() http.Handler { return httpapi.WithRequestID(g.mux) }

// Routes are the routes the Mux serves ("METHOD /path"; the console's, which answers its own
// paths, without a method).
func (g *Gateway) Routes() []string { return g.mux.routes }

// completions builds one provider per configured provider and the completion service on them.
func completions(d Deps) (*completion.Service, *catalog.Router, error) {
	client := d.HTTPClient
	if client == nil {
		client = provider.NewHTTPClient()
	}
	var tracer completion.Tracer
	if d.Tracer != nil {
		client, tracer = d.Tracer.Client(client), d.Tracer
	}
	router, err := catalog.NewRouter(d.Catalog, Factories(), d.Credential, client)
	if err != nil {
		return nil, nil, err
	}
	controls, err := d.controls()
	if err != nil {
		return nil, nil, err
	}
	observers := completion.Observers{logObserver{httpapi.Logger(d.Log)}}
	if d.Observer != nil {
		observers = append(observers, d.Observer)
	}
	return &completion.Service{Router: router, Engine: d.Engine, Settings: d.settings(), Observer: observers, Controls: controls, Tracer: tracer}, router, nil
}

func models(d Deps, list openaiapi.ModelLister) http.Handler {
	h := &openaiapi.Handler{Models: list, MaxBody: d.MaxBody, Log: d.Log}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", h.ListModels)
	mux.HandleFunc("GET /v1/models/{id...}", h.GetModel)
	return httpapi.Routes(openaiapi.Render, readEndpoint(d, openaiapi.Render, mux.ServeHTTP), modelsRoutes...)
}

func openAIChat(d Deps, svc *completion.Service, guard *idempotency.Guard) http.Handler {
	h := &openaiapi.Handler{Completions: svc, MaxBody: d.MaxBody, Log: d.Log}
	chat := httpapi.Idempotent(guard, openaiapi.Render, openAIChatRoutes[0], d.MaxBody, http.HandlerFunc(h.Chat))
	return httpapi.Routes(openaiapi.Render, traced(d, openAIChatRoutes[0], endpoint(d, openaiapi.Render, chat.ServeHTTP)), openAIChatRoutes...)
}

// traced gives a chat route's requests their span when tracing is on.
func traced(d Deps, route string, h http.Handler) http.Handler {
	if d.Tracer == nil {
		return h
	}
	return d.Tracer.Handler(route, h)
}

// endpoint wraps h with what every authenticated route needs.
func endpoint(d Deps, render httpapi.Render, h http.HandlerFunc) http.Handler {
	return httpapi.WithRequestID(httpapi.AccessLog(httpapi.Logger(d.Log), httpapi.WithBudget(d.Budget, httpapi.Authenticate(d.Keys, render, h))))
}

// readEndpoint is endpoint for a route that reads (models, usage, policy-check, receipts): the
// key's ReadBudget applies, apart from its chat limits.
func readEndpoint(d Deps, render httpapi.Render, h http.HandlerFunc) http.Handler {
	if d.ReadBudget != nil {
		h = d.ReadBudget.Wrap(render, h)
	}
	return endpoint(d, render, h)
}
