// Command classic-chat is the Lambda behind POST /chat/completions (response streaming).
package main

import (
	"github.com/secureai-gateway/gateway/internal/aws/awslambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/provider/adapters"
)

func main() {
	c := cloud.MustLoad("classic-chat")
	awslambda.StartStreaming(c.Endpoint(gateway.ClassicChat, adapters.Factories()))
}
