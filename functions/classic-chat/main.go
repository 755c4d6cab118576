// Command classic-chat is the Lambda behind POST /chat/completions (response streaming).
package main

import (
	"github.com/secureai-gateway/gateway/internal/awslambda"
	"github.com/secureai-gateway/gateway/internal/classicapi"
	"github.com/secureai-gateway/gateway/internal/cloud"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

func main() {
	c := cloud.MustLoad("classic-chat")
	awslambda.StartStreaming(c.Endpoint(classicapi.Render, gateway.NewClassicChat))
}
