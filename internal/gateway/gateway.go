// Package gateway is the composition root: it assembles the features from the stores a deployment
// passes (Stores, Deps.Attach) and holds what every endpoint builder shares — the Endpoint value
// (routes, error envelope, builder, the features it needs), the middleware of an authenticated
// route, the completion service and the Idempotency-Key guard. Each endpoint lives in its own
// package under internal/endpoint, so a Lambda function links only its own; the local server
// mounts every one on one mux (internal/local/localserver). Provider adapters come from
// Deps.Providers, so an endpoint that calls no provider links none.
package gateway

import (
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
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
	// TrustedProxies are the reverse proxies whose X-Forwarded-Proto and X-Forwarded-For the web
	// console believes (SECUREAI_TRUSTED_PROXIES); nil: none.
	TrustedProxies []netip.Prefix
	// LocalURL is the local server's base URL (http://127.0.0.1:$PORT): the first server GET
	// /openapi.json names; "" leaves the document's own (port 8080), as in the cloud.
	LocalURL string
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

	chat *chat // built once by SharedChat for every endpoint that calls providers; nil: each builds its own
}

// WithDefaults fills what d leaves unset (MaxBody).
func (d Deps) WithDefaults() Deps {
	if d.MaxBody <= 0 {
		d.MaxBody = DefaultMaxBody
	}
	return d
}

// Every builder has one shape, func(Deps) (http.Handler, error): an Endpoint's Build. A builder
// whose store the Deps leaves unset answers an *OffError: the local server then mounts nothing
// there, and a function fails its start naming what is missing.

// OffError is a builder's answer when the Deps lack what its endpoint needs.
type OffError struct {
	Endpoint string
	Needs    string // what to configure, in the cloud's terms
}

func (e *OffError) Error() string { return e.Endpoint + " is off: it needs " + e.Needs }

// RouteMux is a mux that remembers the routes mounted on it.
type RouteMux struct {
	*http.ServeMux
	routes []string
}

// NewRouteMux returns an empty RouteMux.
func NewRouteMux() *RouteMux { return &RouteMux{ServeMux: http.NewServeMux()} }

// Mount serves h at routes.
func (m *RouteMux) Mount(h http.Handler, routes []string) {
	m.routes = append(m.routes, routes...)
	for _, p := range httpapi.Paths(routes...) {
		m.Handle(p, h)
	}
}

// MountBuilt builds and mounts each endpoint on m. With optional, one the deployment leaves off is
// skipped; without, its *OffError is returned like any other. It is a function, not a method: a
// RouteMux is an http.Handler, and the linker keeps every exported method of a type used as an
// interface, with the types its signature reaches (Deps, and through it the chat endpoints' parts)
// — in every function that serves one.
func MountBuilt(m *RouteMux, d Deps, optional bool, es ...Endpoint) error {
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
			routes = r.Routes() // a handler that names its routes (admin's, a mux of several) mounts those
		}
		m.Mount(h, routes)
	}
	return nil
}

// Routes are the routes mounted ("METHOD /path"; the console's, which answers its own paths,
// without a method).
func (m *RouteMux) Routes() []string { return m.routes }

// chat is what the endpoints that call providers share: the completion service over one set of
// providers, and the Idempotency-Key guard (nil without a store).
type chat struct {
	svc   *completion.Service
	guard *idempotency.Guard
}

// ChatOf builds them, or returns those SharedChat built for every endpoint of one deployment.
func ChatOf(d Deps) (*completion.Service, *idempotency.Guard, error) {
	if d.chat != nil {
		return d.chat.svc, d.chat.guard, nil
	}
	svc, err := completions(d)
	if err != nil {
		return nil, nil, err
	}
	return svc, newGuard(d), nil
}

// SharedChat returns d with one completion service and guard that every endpoint built from it
// uses, as the local server and the console do.
func SharedChat(d Deps) (Deps, error) {
	svc, guard, err := ChatOf(d)
	if err != nil {
		return d, err
	}
	d.chat = &chat{svc: svc, guard: guard}
	return d, nil
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
	return &completion.Service{Router: router, Engine: d.Engine, Settings: d.settings(), Observer: observers, Controls: controls, Tracer: tracer,
		Aliases: d.Catalog.Aliases}, nil
}

// ChatRoute builds a chat surface's one route: the surface's handler (chat, over the shared
// completion service) behind Idempotency-Key replays, the span, and what every authenticated
// route needs, answering other routes in render's envelope.
func ChatRoute(d Deps, render httpapi.Render, route string, chat func(*completion.Service, Deps) http.HandlerFunc) (http.Handler, error) {
	d = d.WithDefaults()
	svc, guard, err := ChatOf(d)
	if err != nil {
		return nil, err
	}
	h := httpapi.Idempotent(guard, render, route, d.MaxBody, chat(svc, d))
	return httpapi.Routes(render, traced(d, route, authenticated(d, render, h.ServeHTTP)), route), nil
}

// traced gives a chat route's requests their span when tracing is on.
func traced(d Deps, route string, h http.Handler) http.Handler {
	if d.Tracer == nil {
		return h
	}
	return d.Tracer.Handler(route, h)
}

// authenticated wraps h with what every authenticated route needs.
func authenticated(d Deps, render httpapi.Render, h http.HandlerFunc) http.Handler {
	return httpapi.WithRequestID(httpapi.AccessLog(httpapi.Logger(d.Log), httpapi.WithBudget(d.Budget, httpapi.Authenticate(d.Keys, render, h))))
}

// Reading is authenticated for a route that reads (models, usage, policy-check, receipts): the
// key's ReadBudget applies, apart from its chat limits.
func Reading(d Deps, render httpapi.Render, h http.HandlerFunc) http.Handler {
	if d.ReadBudget != nil {
		h = d.ReadBudget.Wrap(render, h)
	}
	return authenticated(d, render, h)
}
