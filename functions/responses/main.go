// Command responses is the Lambda behind POST /v1/responses (the OpenAI Responses surface,
// response streaming).
package main

import (
	"github.com/secureai-gateway/gateway/internal/aws/awslambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/endpoint/responses"
	"github.com/secureai-gateway/gateway/internal/provider/adapters"
)

func main() {
	c := cloud.MustLoad("responses")
	awslambda.StartStreaming(c.Endpoint(responses.Endpoint, adapters.Factories()))
}
