// Command classic-chat is the Lambda behind POST /chat/completions (response streaming).
package main

import (
	"github.com/secureai-gateway/gateway/internal/aws/awslambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/endpoint/classicchat"
	"github.com/secureai-gateway/gateway/internal/provider/adapters"
)

func main() {
	c := cloud.MustLoad("classic-chat")
	awslambda.StartStreaming(c.Endpoint(classicchat.Endpoint, adapters.Factories()))
}
