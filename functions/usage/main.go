// Command usage is the Lambda behind GET /usage: the calling key's quota, limits and spend.
package main

import (
	"github.com/secureai-gateway/gateway/internal/aws/awslambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/endpoint/usage"
)

func main() {
	c := cloud.MustLoad("usage")
	awslambda.Start(c.Endpoint(usage.Endpoint, nil))
}
