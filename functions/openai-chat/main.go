// Command openai-chat is the Lambda behind POST /v1/chat/completions (response streaming).
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
		log.Fatalf("openai-chat: %v", err)
	}
	awslambda.StartStreaming(c.Endpoint(openaiapi.Render, gateway.NewOpenAIChat))
}
