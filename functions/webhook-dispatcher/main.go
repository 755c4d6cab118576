// Command webhook-dispatcher is the Lambda on the webhook queue: it fans each gateway event out
// into one delivery message per subscribed endpoint and runs each delivery attempt, re-queueing a
// failed one with a delay.
package main

import (
	"log"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/aws/sqsqueue"
)

func main() {
	c := cloud.MustLoad("webhook-dispatcher")
	if c.Config.WebhookQueueURL == "" {
		log.Fatal("webhook-dispatcher: SECUREAI_WEBHOOK_QUEUE_URL is not set: retries need the webhook queue")
	}
	lambda.Start(c.Flushing(sqsqueue.Webhooks(c.Dispatcher(), c.Log)))
}
