package gateway

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/entitlement"
	"github.com/secureai-gateway/gateway/internal/policy"
	"github.com/secureai-gateway/gateway/internal/receipt"
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

// Table serves routes, each behind mw, in render's envelope. The envelope is the caller's, so
// this package links no surface: a function links only its own endpoint's edge.
func Table(render httpapi.Render, mw func(http.HandlerFunc) http.Handler, routes []httpapi.Route) http.Handler {
	return httpapi.WithRequestID(httpapi.Table(render, httpapi.Behind(render, mw, routes)...))
}

// Reader puts a route that reads behind Reading, in render's envelope.
func Reader(d Deps, render httpapi.Render) func(http.HandlerFunc) http.Handler {
	return func(h http.HandlerFunc) http.Handler { return Reading(d, render, h) }
}

// AdminOnly puts a route behind authenticated for admin keys only (401 anonymous, 403 a normal
// key), in render's envelope.
func AdminOnly(d Deps, render httpapi.Render) func(http.HandlerFunc) http.Handler {
	return func(h http.HandlerFunc) http.Handler {
		return authenticated(d, render, httpapi.RequireAdmin(render, h).ServeHTTP)
	}
}
