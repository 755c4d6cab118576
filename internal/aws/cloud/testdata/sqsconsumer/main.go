// Command sqsconsumer is a trivial SQS-triggered function wired through cloud.Load, as the event
// consumers (webhook-dispatcher, audit-writer) are: load, build the consumer from the loaded
// pieces, start. Each message body is an API key hash; a hash the key store holds is processed,
// any other is reported as a batch item failure (ReportBatchItemFailures) so SQS delivers that
// message again and only that one.
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
)

func main() {
	c, err := cloud.Load(context.Background())
	if err != nil {
		log.Fatalf("sqsconsumer: %v", err)
	}
	lambda.Start(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var out events.SQSEventResponse
		for _, m := range ev.Records {
			if _, err := c.Store.KeyByHash(ctx, m.Body); err != nil {
				c.Log.ErrorContext(ctx, "message failed", "message_id", m.MessageId, "err", err)
				out.BatchItemFailures = append(out.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			}
		}
		return out, nil
	})
}
