package gateway

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/accountapi"
	"github.com/secureai-gateway/gateway/internal/api/adminapi"
	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/entitlement"
	"github.com/secureai-gateway/gateway/internal/policy"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/signing"
)

// Policies are the SMLTP policies: the built-in ones overlaid with the catalog's.
func Policies(c *catalog.Catalog) (*policy.Set, error) {
	if len(c.SMLTPPolicies) == 0 {
		return policy.BuiltinSet, nil
	}
	config, err := policy.Parse(c.SMLTPPolicies)
	if err != nil {
		return nil, err
	}
	return policy.NewSet(config)
}

// controls assembles what governs each completion from the deployment's stores.
func (d Deps) controls() (completion.Controls, error) {
	set, err := Policies(d.Catalog)
	if err != nil {
		return completion.Controls{}, err
	}
	c := completion.Controls{Policies: set, Keys: d.Keys}
	if d.Ledger != nil {
		c.Ledger = d.Ledger
	}
	if d.Billing != nil {
		c.Billing = d.Billing
	}
	if d.Breakers != nil {
		c.Breakers = d.Breakers
	}
	if d.Limits != nil {
		c.Counts = d.Limits
	}
	if d.Signer != nil {
		c.Tokens = &entitlement.Minter{Signer: d.Signer}
		if d.Receipts != nil && d.Ledger != nil {
			c.Receipts = &receipt.Issuer{Signer: d.Signer} // the ledger stores them
		}
	}
	return c, nil
}

func (d Deps) settings() chain.Settings {
	s := chain.ProjectSettings
	s.SkipUnhealthy = d.SkipUnhealthy
	return s
}

var (
	// adminRoutes is where the admin endpoint's function answers; the local server mounts the
	// exact routes its handler names (routed.Routes).
	adminRoutes   = []string{"/admin/"}
	usageRoutes   = []string{"GET /usage"}
	jwksRoutes    = []string{jwksRoute}
	receiptRoutes = []string{"GET /receipts/{bundleId}", "GET /receipts/{$}"}
	metricsRoutes = []string{"GET /metrics"}
)

// metricsEndpoint serves GET /metrics to admin keys only (401 anonymous, 403 a normal key): the
// numbers describe every key's traffic.
func metricsEndpoint(d Deps) http.Handler {
	return httpapi.Routes(classicapi.Render, endpoint(d, classicapi.Render, httpapi.RequireAdmin(classicapi.Render, d.Metrics).ServeHTTP), metricsRoutes...)
}

// adminTable is the route table of every admin feature the Deps configure.
func adminTable(d Deps) []httpapi.Route {
	var routes []httpapi.Route
	if d.KeyAdmin != nil {
		routes = append(routes, (&adminapi.Keys{Service: d.KeyAdmin, Limits: d.Limits, KeyCacheTTL: d.KeyCacheTTL}).Routes()...)
	}
	if d.Breakers != nil {
		routes = append(routes, adminapi.Breakers{Breakers: d.Breakers}.Routes()...)
	}
	if d.Webhooks != nil {
		routes = append(routes, d.Webhooks.Routes()...)
	}
	if d.RequestStats != nil {
		routes = append(routes, adminapi.RequestStats{Store: d.RequestStats}.Routes()...)
	}
	return routes
}

// NewAdmin builds /admin/api-keys…, /admin/users/{id}, /admin/circuit-breakers…, /admin/webhooks…,
// /admin/audit-logs and /admin/stats/requests (each where its store is configured): admin keys only (401 anonymous,
// 403 "Access denied" for a normal key), classic envelope. The handler knows its routes
// (routed.Routes), so the local server mounts exactly them.
func NewAdmin(d Deps) (http.Handler, error) {
	if d.KeyAdmin == nil && d.Breakers == nil && d.Webhooks == nil {
		return nil, &OffError{"/admin", "the users, circuit-breakers or webhooks and audit tables"}
	}
	d = d.withDefaults()
	table := adminTable(d)
	admin := func(h http.HandlerFunc) http.Handler {
		return endpoint(d, classicapi.Render, httpapi.RequireAdmin(classicapi.Render, h).ServeHTTP)
	}
	return routed{classicTable(admin, table), httpapi.Patterns(table)}, nil
}

// routed is an endpoint whose routes depend on what the Deps configure.
type routed struct {
	http.Handler
	routes []string
}

func (r routed) Routes() []string { return r.routes }

// NewUsage builds GET /usage: the calling key's quota, limits and spend.
func NewUsage(d Deps) (http.Handler, error) {
	if d.Billing == nil || d.Limits == nil {
		return nil, &OffError{"GET /usage", "the users and limits tables (SECUREAI_TABLE_USERS, SECUREAI_TABLE_LIMITS)"}
	}
	d = d.withDefaults()
	return classicTable(reader(d), (&accountapi.Usage{Limits: d.Limits, Billing: d.Billing}).Routes()), nil
}

// NewJWKS builds GET /.well-known/jwks.json: public, cacheable, no key needed.
func NewJWKS(d Deps) (http.Handler, error) {
	if d.Signer == nil {
		return nil, &OffError{"GET /.well-known/jwks.json", "the signing keyset (SECUREAI_SIGNING_SECRET_ARN)"}
	}
	return httpapi.Routes(classicapi.Render, httpapi.Document("application/jwk-set+json", signing.JWKSCacheControl, d.Signer.JWKS()), jwksRoutes...), nil
}

// NewReceipts builds GET /receipts/{bundleId}: a served request's signed receipt, for the key
// that made it.
func NewReceipts(d Deps) (http.Handler, error) {
	if d.Receipts == nil {
		return nil, &OffError{"GET /receipts/{bundleId}", "the receipts table (SECUREAI_TABLE_RECEIPTS)"}
	}
	d = d.withDefaults()
	return classicTable(reader(d), accountapi.Receipts{Store: d.Receipts}.Routes()), nil
}

// classicTable serves routes, each behind mw, in the classic envelope.
func classicTable(mw func(http.HandlerFunc) http.Handler, routes []httpapi.Route) http.Handler {
	return httpapi.WithRequestID(httpapi.Table(classicapi.Render, httpapi.Behind(classicapi.Render, mw, routes)...))
}

// reader puts a route that reads behind readEndpoint.
func reader(d Deps) func(http.HandlerFunc) http.Handler {
	return func(h http.HandlerFunc) http.Handler { return readEndpoint(d, classicapi.Render, h) }
}
