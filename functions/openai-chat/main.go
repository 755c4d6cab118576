// Command openai-chat is the Lambda behind POST /v1/chat/completions (response streaming).
package main

import (
	"github.com/secureai-gateway/gateway/internal/aws/awslambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/endpoint/openaichat"
	"github.com/secureai-gateway/gateway/internal/provider/adapters"
)

func main() {
	c := cloud.MustLoad("openai-chat")
	awslambda.StartStreaming(c.Endpoint(openaichat.Endpoint, adapters.Factories()))
}
