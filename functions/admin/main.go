// Command admin is the Lambda behind ANY /admin/{proxy+} (buffered): API keys, users, circuit
// breakers, webhooks and the audit log, for admin keys only.
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
		log.Fatalf("admin: %v", err)
	}
	awslambda.Start(c.Endpoint(classicapi.Render, gateway.NewAdmin))
}
