// Command classic-chat is the Lambda behind POST /chat/completions (response streaming).
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
		log.Fatalf("classic-chat: %v", err)
	}
	awslambda.StartStreaming(c.Endpoint(classicapi.Render, gateway.NewClassicChat))
}
