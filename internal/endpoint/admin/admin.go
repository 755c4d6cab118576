// Package admin is the admin endpoint: /admin/api-keys…, /admin/users/{id},
// /admin/circuit-breakers…, /admin/webhooks…, /admin/audit-logs and /admin/stats/requests, each
// where its store is configured. Admin keys only (401 anonymous, 403 "Access denied" for a normal
// key), classic envelope.
package admin

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/adminapi"
	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

// Endpoint is where the admin function answers.
var Endpoint = gateway.Endpoint{Function: "AdminFunction", Routes: []string{"/admin/"}, Render: classicapi.Render, Build: New,
	Needs: gateway.NeedsUsers | gateway.NeedsLimits | gateway.NeedsBreakers | gateway.NeedsWebhooks | gateway.NeedsEvents}

// New builds the endpoint. The handler knows its routes (routed.Routes), so the local server
// mounts exactly them.
func New(d gateway.Deps) (http.Handler, error) {
	if d.KeyAdmin == nil && d.Breakers == nil && d.Webhooks == nil {
		return nil, &gateway.OffError{Endpoint: "/admin", Needs: "the users, circuit-breakers or webhooks and audit tables"}
	}
	d = d.WithDefaults()
	t := table(d)
	return routed{gateway.Table(classicapi.Render, gateway.AdminOnly(d, classicapi.Render), t), httpapi.Patterns(t)}, nil
}

// table is the route table of every admin feature the Deps configure.
func table(d gateway.Deps) []httpapi.Route {
	var routes []httpapi.Route
	if d.KeyAdmin != nil {
		routes = append(routes, (&adminapi.Keys{Service: d.KeyAdmin, Limits: d.Limits, KeyCacheTTL: d.KeyCacheTTL}).Routes()...)
	}
	if d.Breakers != nil {
		routes = append(routes, adminapi.Breakers{Breakers: d.Breakers, Keys: d.KeyAdmin}.Routes()...)
	}
	if d.Webhooks != nil {
		routes = append(routes, d.Webhooks.Routes()...)
	}
	if d.RequestStats != nil {
		routes = append(routes, adminapi.RequestStats{Store: d.RequestStats}.Routes()...)
	}
	return routes
}

// routed is an endpoint whose routes depend on what the Deps configure.
type routed struct {
	http.Handler
	routes []string
}

func (r routed) Routes() []string { return r.routes }
