// Command console is the Lambda behind /console and /console/{proxy+} (response streaming, so
// the playground's answer streams): the web console, over the gateway's API served in-process.
package main

import (
	"github.com/secureai-gateway/gateway/internal/aws/awslambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/endpoint/console"
	"github.com/secureai-gateway/gateway/internal/provider/adapters"
)

func main() {
	c := cloud.MustLoad("console")
	awslambda.StartStreaming(c.Endpoint(console.Endpoint, adapters.Factories()))
}
