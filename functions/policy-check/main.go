// Command policy-check is the Lambda behind POST /policy-check: the dry run of a chat request,
// which calls no provider.
package main

import (
	"context"
	"log"

	"github.com/secureai-gateway/gateway/internal/awslambda"
	"github.com/secureai-gateway/gateway/internal/classicapi"
	"github.com/secureai-gateway/gateway/internal/cloud"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

func main() {
	c, err := cloud.Load(context.Background())
	if err != nil {
		log.Fatalf("policy-check: %v", err)
	}
	awslambda.Start(c.Endpoint(classicapi.Render, gateway.NewPolicyCheck))
}
