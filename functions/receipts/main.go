// Command receipts is the Lambda behind GET /receipts/{bundleId}: a served request's signed
// receipt, for the key that made it.
package main

import (
	"github.com/secureai-gateway/gateway/internal/aws/awslambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/endpoint/receipts"
)

func main() {
	c := cloud.MustLoad("receipts")
	awslambda.Start(c.Endpoint(receipts.Endpoint, nil))
}
