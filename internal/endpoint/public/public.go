// Package public is the endpoint of the routes that need no key: GET /.well-known/jwks.json and
// GET /openapi.json. In the cloud they share the lightest function.
package public

import (
	"net/http"

	"github.com/secureai-gateway/gateway/docs"
	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/signing"
)

const (
	jwksRoute    = "GET /.well-known/jwks.json"
	openAPIRoute = "GET /openapi.json"
)

// Endpoint serves both routes on one handler.
var Endpoint = gateway.Endpoint{Function: "JWKSFunction", Routes: []string{jwksRoute, openAPIRoute}, Render: classicapi.Render,
	Build: New, Needs: gateway.NeedsSigning}

// New builds both routes. The API description needs nothing configured: it is served even when
// the JWKS is off.
func New(d gateway.Deps) (http.Handler, error) {
	mux := gateway.NewRouteMux()
	err := gateway.MountBuilt(mux, d, true,
		gateway.Endpoint{Routes: []string{jwksRoute}, Build: NewJWKS},
		gateway.Endpoint{Routes: []string{openAPIRoute}, Build: newOpenAPI})
	if err != nil {
		return nil, err
	}
	mux.Handle("/", httpapi.WithRequestID(httpapi.NotFound(classicapi.Render)))
	return mux, nil
}

// NewJWKS builds GET /.well-known/jwks.json: public, cacheable, no key needed.
func NewJWKS(d gateway.Deps) (http.Handler, error) {
	if d.Signer == nil {
		return nil, &gateway.OffError{Endpoint: jwksRoute, Needs: "the signing keyset (SECUREAI_SIGNING_SECRET_ARN)"}
	}
	return httpapi.Routes(classicapi.Render, httpapi.Document("application/jwk-set+json", signing.JWKSCacheControl, d.Signer.JWKS()), jwksRoute), nil
}

// newOpenAPI builds GET /openapi.json: docs/openapi.yaml as JSON, public like the JWKS (it
// describes the API, nothing of its data), its first server the local server's own address when
// the Deps name one. The conversion runs once per process.
func newOpenAPI(d gateway.Deps) (http.Handler, error) {
	doc, err := docs.OpenAPIJSON()
	if err != nil {
		return nil, err
	}
	if d.LocalURL != "" {
		if doc, err = docs.WithFirstServer(doc, d.LocalURL); err != nil {
			return nil, err
		}
	}
	return httpapi.Routes(classicapi.Render, httpapi.Document("application/json", "public, max-age=300", doc), openAPIRoute), nil
}
