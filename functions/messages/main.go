// Command messages is the Lambda behind POST /v1/messages and /v1/messages/count_tokens (the
// Anthropic Messages surface, response streaming).
package main

import (
	"github.com/secureai-gateway/gateway/internal/aws/awslambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/endpoint/messages"
	"github.com/secureai-gateway/gateway/internal/provider/adapters"
)

func main() {
	c := cloud.MustLoad("messages")
	awslambda.StartStreaming(c.Endpoint(messages.Endpoint, adapters.Factories()))
}
