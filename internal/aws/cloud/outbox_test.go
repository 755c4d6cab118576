package cloud_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	eb "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/secureai-gateway/gateway/internal/aws/sqsqueue"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// eventQueues are, on moto, the stack's event bus with a rule routing every gateway event to a
// subscriber queue, and the event outbox queue.
type eventQueues struct {
	sqs                *sqs.Client
	bus                string
	subscriber, outbox string // queue URLs
}

func newEventQueues(t *testing.T) eventQueues {
	t.Helper()
	ctx := context.Background()
	cfg := testenv.AWSConfig(t, testenv.Moto(t))
	sqc, ebc := sqs.NewFromConfig(cfg), eb.NewFromConfig(cfg)
	q := eventQueues{sqs: sqc, bus: testenv.UniqueName(t, "bus")}
	if _, err := ebc.CreateEventBus(ctx, &eb.CreateEventBusInput{Name: aws.String(q.bus)}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []*string{&q.subscriber, &q.outbox} {
		out, err := sqc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(testenv.UniqueName(t, "q"))})
		if err != nil {
			t.Fatal(err)
		}
		*u = aws.ToString(out.QueueUrl)
	}
	attrs, err := sqc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.subscriber),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	rule := testenv.UniqueName(t, "all")
	if _, err := ebc.PutRule(ctx, &eb.PutRuleInput{Name: aws.String(rule), EventBusName: aws.String(q.bus),
		EventPattern: aws.String(`{"source":["secureai.gateway"]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ebc.PutTargets(ctx, &eb.PutTargetsInput{Rule: aws.String(rule), EventBusName: aws.String(q.bus),
		Targets: []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)])}}}); err != nil {
		t.Fatal(err)
	}
	return q
}

func (q eventQueues) receive(t *testing.T, url string) []sqstypes.Message {
	t.Helper()
	out, err := q.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

// A failover's event that EventBridge does not take — PutEvents hangs, or fails — is not lost:
// the function puts it in the outbox queue before its invocation ends, and the event relay's
// handler puts it on the bus later, where the rules deliver it as if it had come directly.
func TestAnEventTheBusDoesNotTakeArrivesThroughTheOutbox(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail bool
	}{{"PutEvents hangs", false}, {"PutEvents fails", true}} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			q := newEventQueues(t)
			t.Setenv("SECUREAI_DEMO", "true")
			t.Setenv("SECUREAI_EVENT_BUS", q.bus)
			t.Setenv("SECUREAI_EVENT_OUTBOX_URL", q.outbox)
			c, _ := load(t)
			fx.proxy.Break("AWSEvents.PutEvents", tc.fail)

			out, _ := invokeStream(t, openAIChat(c), fx.secret,
				`{"model":"demo/error-500","fallback_models":["demo/ok"],"stream":true,"messages":[{"role":"user","content":"Hello"}]}`, 10*time.Second)
			if len(out) == 0 {
				t.Fatal("no answer")
			}
			// The invocation's own flush ends within event.FlushTimeout (an event test proves the
			// hand-over happens within it); settle here without racing that bound.
			settle, stop := context.WithTimeout(context.Background(), 30*time.Second)
			defer stop()
			if err := c.Events.Flush(settle); err != nil {
				t.Fatal(err)
			}
			if st := c.Events.(*event.Async).Stats(); st.Deferred != 1 || st.Published != 0 || st.Failed != 0 {
				t.Fatalf("publisher stats %+v, want the one event deferred to the outbox", st)
			}
			if got := q.receive(t, q.subscriber); len(got) != 0 {
				t.Fatalf("the bus delivered %d events while PutEvents was broken", len(got))
			}

			fx.proxy.Heal()
			held := q.receive(t, q.outbox)
			if len(held) != 1 {
				t.Fatalf("outbox holds %d messages, want the failover event", len(held))
			}
			var e event.Event
			if err := json.Unmarshal([]byte(aws.ToString(held[0].Body)), &e); err != nil || e.Type != event.ModelFailover {
				t.Fatalf("outbox message %s (%v), want the api:model_failover event", aws.ToString(held[0].Body), err)
			}
			resp, err := sqsqueue.Relay(c.Bus, c.Log)(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
				{MessageId: aws.ToString(held[0].MessageId), Body: aws.ToString(held[0].Body), EventSource: "aws:sqs"}}})
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("relay: %+v, %v", resp, err)
			}
			delivered := q.receive(t, q.subscriber)
			if len(delivered) != 1 {
				t.Fatalf("the bus delivered %d events after the relay, want 1", len(delivered))
			}
			var env struct {
				DetailType string      `json:"detail-type"`
				Detail     event.Event `json:"detail"`
			}
			if err := json.Unmarshal([]byte(aws.ToString(delivered[0].Body)), &env); err != nil || env.DetailType != string(event.ModelFailover) || env.Detail.ID != e.ID {
				t.Errorf("delivered %s (%v), want the envelope of %s", aws.ToString(delivered[0].Body), err, e.ID)
			}
		})
	}
}
