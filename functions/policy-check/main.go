// Command policy-check is the Lambda behind POST /policy-check: the dry run of a chat request,
// which calls no provider.
package main

import (
	"github.com/secureai-gateway/gateway/internal/aws/awslambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/endpoint/policycheck"
	"github.com/secureai-gateway/gateway/internal/provider/adapters"
)

func main() {
	c := cloud.MustLoad("policy-check")
	awslambda.Start(c.Endpoint(policycheck.Endpoint, adapters.Factories()))
}
