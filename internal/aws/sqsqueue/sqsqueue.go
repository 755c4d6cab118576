// Package sqsqueue connects the event consumers to SQS in the cloud: the consumer functions the
// webhook-dispatcher, audit-writer and event-relay Lambdas run on each batch (reporting failed
// items, so only those come back), the webhook delivery queue, where a retry waits with
// DelaySeconds instead of in a sleeping Lambda, and the event outbox, where an event the bus did
// not take before an invocation had to end waits for the relay.
package sqsqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/aws/eventbridge"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// Handler is an SQS-triggered Lambda's handler with partial batch responses
// (FunctionResponseTypes: [ReportBatchItemFailures]).
type Handler func(ctx context.Context, batch events.SQSEvent) (events.SQSEventResponse, error)

// handler runs the batch's messages concurrently: each is independent, and a webhook attempt may
// take its full timeout, which ten in a row would spend the function's. A message that can never
// succeed (it is malformed) is logged and dropped rather than retried into the dead-letter queue.
func handler(log *slog.Logger, consume func(ctx context.Context, body []byte) error) Handler {
	return func(ctx context.Context, batch events.SQSEvent) (events.SQSEventResponse, error) {
		errs := make([]error, len(batch.Records))
		var wg sync.WaitGroup
		for i, m := range batch.Records {
			wg.Go(func() { errs[i] = consume(ctx, []byte(m.Body)) })
		}
		wg.Wait()
		var resp events.SQSEventResponse
		for i, m := range batch.Records {
			switch err := errs[i]; {
			case err == nil:
			case fault.KindOf(err) == fault.InvalidRequest:
				log.ErrorContext(ctx, "dropping a malformed message", "messageId", m.MessageId, "err", err)
			default:
				log.ErrorContext(ctx, "message failed; SQS will offer it again", "messageId", m.MessageId, "err", err)
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			}
		}
		return resp, nil
	}
}

// Audit is the audit writer's handler: each message is an EventBridge event from the audit rule.
func Audit(w *audit.Writer, log *slog.Logger) Handler {
	return handler(log, func(ctx context.Context, body []byte) error {
		e, err := eventbridge.Decode(body)
		if err != nil {
			return err
		}
		return w.Write(ctx, e)
	})
}

// Webhooks is the webhook dispatcher's handler. Its queue carries two kinds of message: events
// from the webhook rule, fanned out into one delivery message per endpoint on the same queue, and
// those delivery messages, each one attempt.
func Webhooks(d *webhook.Dispatcher, log *slog.Logger) Handler {
	return handler(log, func(ctx context.Context, body []byte) error {
		var probe struct {
			DeliveryID string `json:"deliveryId"`
		}
		if err := json.Unmarshal(body, &probe); err != nil {
			return fault.Invalid("body", "not JSON: "+err.Error())
		}
		if probe.DeliveryID == "" {
			e, err := eventbridge.Decode(body)
			if err != nil {
				return err
			}
			return d.FanOut(ctx, e)
		}
		var dl webhook.Delivery
		if err := json.Unmarshal(body, &dl); err != nil {
			return fault.Invalid("body", "not a webhook delivery: "+err.Error())
		}
		if dl.EndpointID == "" || dl.Attempt < 1 || dl.Attempt > len(webhook.Backoff) {
			return fault.Invalid("body", fmt.Sprintf("delivery %s has no endpoint or attempt %d is out of range", dl.ID, dl.Attempt))
		}
		if err := dl.Event.Validate(); err != nil {
			return err
		}
		return d.Deliver(ctx, dl)
	})
}

// SendAPI is the part of the SQS client the queue uses.
type SendAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Queue is the webhook delivery queue (webhook.Queue): each delivery is a message, visible after
// its delay.
type Queue struct {
	API SendAPI
	URL string
}

// maxDelay is SQS's limit on DelaySeconds.
const maxDelay = 900 * time.Second

// Enqueue implements webhook.Queue.
func (q Queue) Enqueue(ctx context.Context, d webhook.Delivery, delay time.Duration) error {
	body, err := json.Marshal(d)
	if err != nil {
		return err
	}
	_, err = q.API.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(string(body)),
		DelaySeconds: int32(min(delay, maxDelay) / time.Second)})
	return err
}
