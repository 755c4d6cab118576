// Package usage is the endpoint GET /usage: the calling key's quota, limits and spend.
package usage

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/accountapi"
	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

// Endpoint is GET /usage.
var Endpoint = gateway.Endpoint{Function: "UsageFunction", Routes: []string{"GET /usage"}, Render: classicapi.Render, Build: New,
	Needs: gateway.NeedsUsers | gateway.NeedsLimits}

// New builds the endpoint.
func New(d gateway.Deps) (http.Handler, error) {
	if d.Billing == nil || d.Limits == nil {
		return nil, &gateway.OffError{Endpoint: "GET /usage", Needs: "the users and limits tables (SECUREAI_TABLE_USERS, SECUREAI_TABLE_LIMITS)"}
	}
	d = d.WithDefaults()
	return gateway.Table(classicapi.Render, gateway.Reader(d, classicapi.Render), (&accountapi.Usage{Limits: d.Limits, Billing: d.Billing}).Routes()), nil
}
