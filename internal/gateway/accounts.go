package gateway

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/classicapi"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/entitlement"
	"github.com/secureai-gateway/gateway/internal/httpapi"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
	"github.com/secureai-gateway/gateway/internal/policy"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/reqstats"
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
	adminRoutes   = []string{"/admin/"}
	usageRoutes   = []string{"GET /usage"}
	jwksRoutes    = []string{"GET /.well-known/jwks.json"}
	receiptRoutes = []string{"GET /receipts/{bundleId}", "GET /receipts/{$}"}
	metricsRoutes = []string{"GET /metrics"}
)

// metricsEndpoint serves GET /metrics to admin keys only (401 anonymous, 403 a normal key): the
// numbers describe every key's traffic.
func metricsEndpoint(d Deps) http.Handler {
	return httpapi.Routes(classicapi.Render, endpoint(d, classicapi.Render, httpapi.RequireAdmin(classicapi.Render, d.Metrics).ServeHTTP), metricsRoutes...)
}

// NewAdmin builds /admin/api-keys…, /admin/users/{id}, /admin/circuit-breakers…, /admin/webhooks…,
// /admin/audit-logs and /admin/stats/requests (each where its store is configured): admin keys
// only (401 anonymous, 403 "Access denied" for a normal key), classic envelope.
func NewAdmin(d Deps) (http.Handler, error) {
	if d.KeyAdmin == nil && d.Breakers == nil && d.Webhooks == nil {
		return nil, &OffError{"/admin", "the users, circuit-breakers or webhooks and audit tables"}
	}
	d = d.withDefaults()
	mux := http.NewServeMux()
	if d.KeyAdmin != nil {
		keys := keyHandler(d).Admin()
		mux.Handle("/admin/api-keys", keys)
		mux.Handle("/admin/api-keys/", keys)
		mux.Handle("/admin/users/", keys)
	}
	if d.Breakers != nil {
		a := breaker.Admin{Breakers: d.Breakers, Fail: classicapi.Render}
		mux.HandleFunc("GET /admin/circuit-breakers", a.List)
		mux.HandleFunc("POST /admin/circuit-breakers", a.Open)
		mux.HandleFunc("DELETE /admin/circuit-breakers/{subjectType}/{subjectId}", a.Close)
	}
	if d.Webhooks != nil {
		wh := *d.Webhooks // a copy: the caller's Handlers may serve another surface too
		wh.Fail = classicapi.Render
		wh.Register(mux)
	}
	if d.RequestStats != nil {
		mux.Handle(reqstats.Route, reqstats.Handler{Store: d.RequestStats, Fail: classicapi.Render})
	}
	mux.HandleFunc("/", httpapi.NotFound(classicapi.Render))
	return endpoint(d, classicapi.Render, httpapi.RequireAdmin(classicapi.Render, mux).ServeHTTP), nil
}

// NewUsage builds GET /usage: the calling key's quota, limits and spend.
func NewUsage(d Deps) (http.Handler, error) {
	if d.Billing == nil || d.Limits == nil {
		return nil, &OffError{"GET /usage", "the users and limits tables (SECUREAI_TABLE_USERS, SECUREAI_TABLE_LIMITS)"}
	}
	d = d.withDefaults()
	return httpapi.Routes(classicapi.Render, readEndpoint(d, classicapi.Render, keyHandler(d).Usage().ServeHTTP), usageRoutes...), nil
}

// keyHandler serves the key and user admin routes and GET /usage, in the classic envelope.
func keyHandler(d Deps) *keyadmin.Handler {
	return &keyadmin.Handler{Service: d.KeyAdmin, Limits: d.Limits, Billing: d.Billing, Fail: classicapi.Render, KeyCacheTTL: d.KeyCacheTTL}
}

// NewJWKS builds GET /.well-known/jwks.json: public, cacheable, no key needed.
func NewJWKS(d Deps) (http.Handler, error) {
	if d.Signer == nil {
		return nil, &OffError{"GET /.well-known/jwks.json", "the signing keyset (SECUREAI_SIGNING_SECRET_ARN)"}
	}
	return httpapi.Routes(classicapi.Render, d.Signer.JWKSHandler(), jwksRoutes...), nil
}

// NewReceipts builds GET /receipts/{bundleId}: a served request's signed receipt, for the key
// that made it.
func NewReceipts(d Deps) (http.Handler, error) {
	if d.Receipts == nil {
		return nil, &OffError{"GET /receipts/{bundleId}", "the receipts table (SECUREAI_TABLE_RECEIPTS)"}
	}
	d = d.withDefaults()
	h := receipt.Handler{Store: d.Receipts, Fail: classicapi.Render}
	return httpapi.Routes(classicapi.Render, readEndpoint(d, classicapi.Render, h.ServeHTTP), receiptRoutes...), nil
}
