// Command models is the Lambda behind GET /v1/models and GET /v1/models/{id}: the catalog and the
// key lookup, no provider call and no idempotency guard.
package main

import (
	"github.com/secureai-gateway/gateway/internal/aws/awslambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/endpoint/models"
)

func main() {
	c := cloud.MustLoad("models")
	awslambda.Start(c.Endpoint(models.Endpoint, nil))
}
