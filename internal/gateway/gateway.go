// Package gateway assembles the endpoints from their dependencies. Each endpoint is one value
// (Endpoint: its routes, its error envelope, its builder and the features it needs) that a Lambda
// function builds alone and the local server mounts with every other on one mux (New). Features
// come from the stores a deployment passes (Stores, Deps.Attach), and the provider adapters from
// Deps.Providers, so an endpoint that calls no provider links none.
package gateway

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
	"github.com/secureai-gateway/gateway/internal/api/webhookadmin"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/idempotency"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/reqstats"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/internal/tracing"
)

// DefaultMaxBody is the request body limit when Deps leaves it unset (SECUREAI_MAX_BODY_BYTES).
const DefaultMaxBody = 8 << 20

// Deps are what the endpoints need; each builder takes only its part (models reads neither
// HTTPClient, Engine nor Idempotency).
type Deps struct {
	Catalog *catalog.Catalog
	// Providers are the provider adapters by wire type (adapters.Factories()): the endpoints that
	// reach providers — the chat surfaces, the dry run, the console — need them; nil elsewhere.
	Providers  map[string]catalog.Factory
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
	// RequestCounter counts every completed chat request in memory (its owner flushes it);
	// RequestStats serves the flushed counts at GET /admin/stats/requests. nil: off.
	RequestCounter *reqstats.Counter
	RequestStats   reqstats.Store

	chat *chat // built once by New for every endpoint that calls providers; nil: each builds its own
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
	policyCheckRoutes = []string{"POST /policy-check"}
	openAPIRoutes     = []string{openAPIRoute}
)

// The public routes' patterns are constants, so that Public, which serves both, is built at
// compile time (see Console).
const (
	jwksRoute    = "GET /.well-known/jwks.json"
	openAPIRoute = "GET /openapi.json"
)

// Every New… builder has one shape, func(Deps) (http.Handler, error): an Endpoint's Build. A builder whose store the Deps leaves unset answers an *OffError:
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
	c, err := d.chatParts()
	if err != nil {
		return nil, err
	}
	return openAIChat(d, c.svc, c.guard), nil
}

// NewClassicChat builds POST /chat/completions.
func NewClassicChat(d Deps) (http.Handler, error) {
	d = d.withDefaults()
	c, err := d.chatParts()
	if err != nil {
		return nil, err
	}
	return classicChat(d, c.svc, c.guard), nil
}

// Gateway holds every endpoint, built on one router, for the local server.
type Gateway struct {
	mux *routeMux
}

// New builds the providers and every endpoint once, for the local server; nothing here runs per
// request.
func New(d Deps) (*Gateway, error) {
	d = d.withDefaults()
	// One completion service and one idempotency guard for every endpoint that calls providers.
	c, err := d.chatParts()
	if err != nil {
		return nil, err
	}
	d.chat = c
	g := &Gateway{mux: newRouteMux()}
	for _, e := range Endpoints() {
		if e.Function == Console.Function {
			// The console calls this very mux, so it shows every route the local server has.
			e.Build = func(d Deps) (http.Handler, error) { return consoleOver(d, g.mux) }
		}
		if err := mountBuilt(g.mux, d, true, e); err != nil {
			return nil, err
		}
	}
	if d.Metrics != nil {
		mount(g.mux, metricsEndpoint(d), metricsRoutes)
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

// mountBuilt builds and mounts each endpoint on mux. With optional, one the deployment leaves
// off is skipped; without, its *OffError is returned like any other.
func mountBuilt(mux *routeMux, d Deps, optional bool, es ...Endpoint) error {
	for _, e := range es {
		h, err := e.Build(d)
		var off *OffError
		switch {
		case optional && errors.As(err, &off):
			continue // a feature this deployment leaves off
		case err != nil:
			return err
		}
		routes := e.Routes
		if r, ok := h.(interface{ Routes() []string }); ok {
			routes = r.Routes() // the admin endpoint names the routes of what is configured
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

// chat is what the endpoints that call providers share: the completion service over one set of
// providers, and the Idempotency-Key guard.
type chat struct {
	svc   *completion.Service
	guard *idempotency.Guard
}

// chatParts builds them, or returns those New built for every endpoint of the local server.
func (d Deps) chatParts() (*chat, error) {
	if d.chat != nil {
		return d.chat, nil
	}
	svc, err := completions(d)
	if err != nil {
		return nil, err
	}
	return &chat{svc: svc, guard: newGuard(d)}, nil
}

// completions builds one provider per configured provider and the completion service on them.
func completions(d Deps) (*completion.Service, error) {
	client := d.HTTPClient
	if client == nil {
		client = provider.NewHTTPClient()
	}
	var tracer completion.Tracer
	if d.Tracer != nil {
		client, tracer = d.Tracer.Client(client), d.Tracer
	}
	if len(d.Providers) == 0 {
		return nil, errors.New("gateway: no provider adapters in Deps.Providers (adapters.Factories()): the chat endpoints call providers")
	}
	router, err := catalog.NewRouter(d.Catalog, d.Providers, d.Credential, client)
	if err != nil {
		return nil, err
	}
	controls, err := d.controls()
	if err != nil {
		return nil, err
	}
	observers := completion.Observers{logObserver{httpapi.Logger(d.Log)}}
	if d.Observer != nil {
		observers = append(observers, d.Observer)
	}
	if d.RequestCounter != nil {
		observers = append(observers, d.RequestCounter)
	}
	return &completion.Service{Router: router, Engine: d.Engine, Settings: d.settings(), Observer: observers, Controls: controls, Tracer: tracer}, nil
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
