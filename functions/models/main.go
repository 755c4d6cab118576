// Command models is the Lambda behind GET /v1/models and GET /v1/models/{id}: the catalog and the
// key lookup, no provider call and no idempotency guard.
package main

import (
	"context"
	"log"

	"github.com/secureai-gateway/gateway/internal/awslambda"
	"github.com/secureai-gateway/gateway/internal/cloud"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/openaiapi"
)

func main() {
	c, err := cloud.Load(context.Background())
	if err != nil {
		log.Fatalf("models: %v", err)
	}
	awslambda.Start(c.Endpoint(openaiapi.Render, gateway.NewModels))
}
