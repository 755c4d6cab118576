// Command webhook-dispatcher is the Lambda on the webhook queue: it fans each gateway event out
// into one delivery message per subscribed endpoint and runs each delivery attempt, re-queueing a
// failed one with a delay.
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/secureai-gateway/gateway/internal/awsclient"
	"github.com/secureai-gateway/gateway/internal/dynamostore"
	"github.com/secureai-gateway/gateway/internal/sqsqueue"
	"github.com/secureai-gateway/gateway/internal/webhook"
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
	store := dynamostore.New(dynamodb.NewFromConfig(cfg), dynamostore.Tables{
		Webhooks: os.Getenv("SECUREAI_TABLE_WEBHOOKS"), WebhookAttempts: os.Getenv("SECUREAI_TABLE_WEBHOOK_ATTEMPTS")})
	// END LOCAL LOADER

	allowPrivate, err := webhook.AllowPrivate(os.Getenv(webhook.EnvAllowPrivate), false)
	if err != nil {
		log.Error("configuration", "err", err)
		os.Exit(1)
	}
	guard := webhook.NewGuard(allowPrivate)
	d := &webhook.Dispatcher{
		Store:  store,
		Queue:  sqsqueue.Queue{API: sqs.NewFromConfig(cfg), URL: os.Getenv("SECUREAI_WEBHOOK_QUEUE_URL")},
		Poster: &webhook.Poster{Client: guard.Client(), Now: time.Now},
		Log:    log,
	}
	lambda.Start(sqsqueue.Webhooks(d, log))
}
