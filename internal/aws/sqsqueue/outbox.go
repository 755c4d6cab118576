package sqsqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
)

// BatchSendAPI is the part of the SQS client the outbox uses.
type BatchSendAPI interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// Outbox is the event outbox (an event.Sender, the Outbox of an event.Async): events the bus did
// not take before an invocation had to end wait there, one message each, until the event relay
// (Relay) puts them on the bus. A queue is what survives the instance: work left running after
// the response may be frozen for good.
type Outbox struct {
	API BatchSendAPI
	URL string
}

// maxBatch is SendMessageBatch's limit of entries per call.
const maxBatch = 10

// Send implements event.Sender: one SendMessageBatch per ten events; an entry SQS refuses fails
// the send (the publisher then logs the events whole).
func (o Outbox) Send(ctx context.Context, events []event.Event) error {
	for start := 0; start < len(events); start += maxBatch {
		batch := events[start:min(start+maxBatch, len(events))]
		entries := make([]types.SendMessageBatchRequestEntry, len(batch))
		for i, e := range batch {
			body, err := json.Marshal(e)
			if err != nil {
				return fmt.Errorf("sqsqueue: encoding event %s: %w", e.ID, err)
			}
			entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body))}
		}
		out, err := o.API.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(o.URL), Entries: entries})
		if err != nil {
			return fmt.Errorf("sqsqueue: putting %d events in the outbox: %w", len(batch), err)
		}
		if len(out.Failed) > 0 {
			f := out.Failed[0]
			return fmt.Errorf("sqsqueue: the outbox refused %d of %d events (first: %s %s)", len(out.Failed), len(batch),
				aws.ToString(f.Code), aws.ToString(f.Message))
		}
	}
	return nil
}

// Relay is the event relay's handler, on the outbox queue: each message is one gateway event,
// put on the bus now through send (an eventbridge.Sender). A failed put comes back after the
// queue's visibility timeout, and goes to its dead-letter queue after maxReceiveCount.
func Relay(send event.Sender, log *slog.Logger) Handler {
	return handler(log, func(ctx context.Context, body []byte) error {
		var e event.Event
		if err := json.Unmarshal(body, &e); err != nil {
			return fault.Invalid("body", "not a gateway event: "+err.Error())
		}
		if err := e.Validate(); err != nil {
			return err
		}
		return send.Send(ctx, []event.Event{e})
	})
}
