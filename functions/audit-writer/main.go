// Command audit-writer is the Lambda on the audit queue: one audit log entry per gateway event.
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/cloud"
	"github.com/secureai-gateway/gateway/internal/sqsqueue"
)

func main() {
	c, err := cloud.Load(context.Background())
	if err != nil {
		log.Fatalf("audit-writer: %v", err)
	}
	lambda.Start(sqsqueue.Audit(&audit.Writer{Store: c.Store.AuditLog()}, c.Log))
}
