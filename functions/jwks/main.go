// Command jwks is the Lambda behind the public routes, no API key needed: GET /.well-known/jwks.json
// (the signing keys) and GET /openapi.json (the API description).
package main

import (
	"github.com/secureai-gateway/gateway/internal/aws/awslambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/endpoint/public"
)

func main() {
	c := cloud.MustLoad("jwks")
	awslambda.Start(c.Endpoint(public.Endpoint, nil))
}
