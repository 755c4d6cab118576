package gateway

import (
	"net/http"

	"github.com/secureai-gateway/gateway/docs"
	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
)

// NewOpenAPI builds GET /openapi.json: docs/openapi.yaml as JSON, public like the JWKS (it
// describes the API, nothing of its data). The conversion runs once per process.
func NewOpenAPI(Deps) (http.Handler, error) {
	doc, err := docs.OpenAPIJSON()
	if err != nil {
		return nil, err
	}
	return httpapi.Routes(classicapi.Render, httpapi.Document("application/json", "public, max-age=300", doc), openAPIRoutes...), nil
}

// NewPublic builds the routes that need no key, GET /.well-known/jwks.json and GET /openapi.json,
// on one handler: in the cloud they share the lightest function.
func NewPublic(d Deps) (http.Handler, error) {
	mux := newRouteMux()
	// The API description needs nothing configured: it is served even when the JWKS is off.
	if err := mountBuilt(mux, d, true, Endpoint{Routes: jwksRoutes, Build: NewJWKS}, Endpoint{Routes: openAPIRoutes, Build: NewOpenAPI}); err != nil {
		return nil, err
	}
	mux.Handle("/", httpapi.WithRequestID(httpapi.NotFound(classicapi.Render)))
	return mux, nil
}
