// Command openai-chat is the Lambda behind POST /v1/chat/completions (response streaming).
package main

import (
	"context"
	"log"
	"net/http"

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
	awslambda.StartStreaming(c.HTTP(openaiapi.Render, func(ctx context.Context) (http.Handler, error) {
		d, err := c.GatewayDeps(ctx)
		if err != nil {
			return nil, err
		}
		return gateway.NewOpenAIChat(d)
	}))
}
