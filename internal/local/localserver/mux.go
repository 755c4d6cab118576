package localserver

import (
	"net/http"
	"strings"

	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
	"github.com/secureai-gateway/gateway/internal/endpoint/admin"
	"github.com/secureai-gateway/gateway/internal/endpoint/classicchat"
	"github.com/secureai-gateway/gateway/internal/endpoint/console"
	"github.com/secureai-gateway/gateway/internal/endpoint/messages"
	"github.com/secureai-gateway/gateway/internal/endpoint/models"
	"github.com/secureai-gateway/gateway/internal/endpoint/openaichat"
	"github.com/secureai-gateway/gateway/internal/endpoint/policycheck"
	"github.com/secureai-gateway/gateway/internal/endpoint/public"
	"github.com/secureai-gateway/gateway/internal/endpoint/receipts"
	"github.com/secureai-gateway/gateway/internal/endpoint/responses"
	"github.com/secureai-gateway/gateway/internal/endpoint/usage"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

// Endpoints are every endpoint a function serves, in the order the local server mounts them.
func Endpoints() []gateway.Endpoint {
	return []gateway.Endpoint{models.Endpoint, openaichat.Endpoint, messages.Endpoint, responses.Endpoint, classicchat.Endpoint, policycheck.Endpoint,
		admin.Endpoint, usage.Endpoint, public.Endpoint, receipts.Endpoint, console.Endpoint}
}

// Gateway holds every endpoint, built on one router, for the local server.
type Gateway struct {
	mux *gateway.RouteMux
}

// NewGateway builds the providers and every endpoint once; nothing here runs per request. An
// endpoint whose feature d leaves off is not mounted.
func NewGateway(d gateway.Deps) (*Gateway, error) {
	// One completion service and one idempotency guard for every endpoint that calls providers.
	d, err := gateway.SharedChat(d.WithDefaults())
	if err != nil {
		return nil, err
	}
	g := &Gateway{mux: gateway.NewRouteMux()}
	for _, e := range Endpoints() {
		if e.Function == console.Endpoint.Function {
			// The console calls this very mux, so it shows every route the local server has.
			e.Build = func(d gateway.Deps) (http.Handler, error) { return console.Over(d, g.mux) }
		}
		if err := gateway.MountBuilt(g.mux, d, true, e); err != nil {
			return nil, err
		}
	}
	if d.Metrics != nil {
		// Admin keys only (401 anonymous, 403 a normal key): the numbers describe every key's traffic.
		g.mux.Mount(httpapi.Routes(classicapi.Render, gateway.AdminOnly(d, classicapi.Render)(d.Metrics.ServeHTTP), metricsRoute), []string{metricsRoute})
	}
	// Unknown routes answer in their surface's envelope: OpenAI's under /v1, classic elsewhere.
	g.mux.Handle("/v1/", httpapi.WithRequestID(httpapi.NotFound(openaiapi.Render)))
	g.mux.Handle("/", httpapi.WithRequestID(httpapi.NotFound(classicapi.Render)))
	return g, nil
}

const metricsRoute = "GET /metrics"

// Mux mounts every route. Every response carries an X-Request-Id; a path that is not in
// canonical form (//v1/…, a . or .. segment), or that only a slash added would match (/v1), is a
// 404 in its surface's envelope, never the ServeMux's redirect.
func (g *Gateway) Mux() http.Handler {
	return httpapi.WithRequestID(httpapi.Canonical(surface, httpapi.NoRedirect(g.mux.ServeMux, surface)))
}

// surface is the envelope of the unknown routes under path: OpenAI's under /v1, classic elsewhere.
func surface(path string) httpapi.Render {
	if path == "/v1" || strings.HasPrefix(path, "/v1/") {
		return openaiapi.Render
	}
	return classicapi.Render
}

// Routes are the routes the Mux serves ("METHOD /path"; the console's, which answers its own
// paths, without a method).
func (g *Gateway) Routes() []string { return g.mux.Routes() }
