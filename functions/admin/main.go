// Command admin is the Lambda behind GET, POST, PUT, PATCH and DELETE /admin/{proxy+} (buffered):
// API keys, users, circuit breakers, webhooks and the audit log, for admin keys only.
package main

import (
	"github.com/secureai-gateway/gateway/internal/aws/awslambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/endpoint/admin"
)

func main() {
	c := cloud.MustLoad("admin")
	awslambda.Start(c.Endpoint(admin.Endpoint, nil))
}
