// Command models is the Lambda behind GET /v1/models.
package main

import (
	"github.com/secureai-gateway/gateway/internal/awslambda"
	"github.com/secureai-gateway/gateway/internal/cloud"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/openaiapi"
)

func main() {
	awslambda.Start(cloud.Handler((*gateway.Gateway).OpenAIModels, openaiapi.Render))
}
