// Command audit-writer is the Lambda on the audit queue: one audit log entry per gateway event.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/aws/sqsqueue"
)

func main() {
	c := cloud.MustLoad("audit-writer")
	lambda.Start(sqsqueue.Audit(&audit.Writer{Store: c.Store.AuditLog()}, c.Log))
}
