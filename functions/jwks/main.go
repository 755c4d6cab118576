// Command jwks is the Lambda behind GET /.well-known/jwks.json: the public signing keys, no API
// key needed.
package main

import (
	"github.com/secureai-gateway/gateway/internal/awslambda"
	"github.com/secureai-gateway/gateway/internal/classicapi"
	"github.com/secureai-gateway/gateway/internal/cloud"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

func main() {
	c := cloud.MustLoad("jwks")
	awslambda.Start(c.Endpoint(classicapi.Render, gateway.NewJWKS))
}
