// Command audit-writer is the Lambda on the audit queue: one audit log entry per gateway event.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/awsclient"
	"github.com/secureai-gateway/gateway/internal/dynamostore"
	"github.com/secureai-gateway/gateway/internal/sqsqueue"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	// LOCAL LOADER — replace with cloud.Load(ctx) once the shape issue is merged.
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("AWS configuration", "err", err)
		os.Exit(1)
	}
	awsclient.Guard(&cfg)
	store := dynamostore.New(dynamodb.NewFromConfig(cfg), dynamostore.Tables{Audit: os.Getenv("SECUREAI_TABLE_AUDIT")})
	// END LOCAL LOADER

	lambda.Start(sqsqueue.Audit(&audit.Writer{Store: store.AuditLog()}, log))
}
