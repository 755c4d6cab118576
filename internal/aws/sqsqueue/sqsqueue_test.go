package sqsqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/aws/sqsqueue"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

type sent struct {
	body  string
	delay int32
}

type fakeSQS struct{ got []sent }

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.got = append(f.got, sent{aws.ToString(in.MessageBody), in.DelaySeconds})
	return &sqs.SendMessageOutput{}, nil
}

func TestRetriesWaitInTheQueueWithDelaySeconds(t *testing.T) {
	f := &fakeSQS{}
	q := sqsqueue.Queue{API: f, URL: "u"}
	d := webhook.Delivery{ID: "d1", EndpointID: "wh_1", Attempt: 2, Event: event.WebhookTestEvent("wh_1", event.Subject{}, time.Now())}
	for _, delay := range webhook.Backoff {
		if err := q.Enqueue(context.Background(), d, delay); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(f.got[0].delay, f.got[1].delay, f.got[2].delay) != "0 10 60" {
		t.Errorf("delays = %v", f.got)
	}
	var back webhook.Delivery
	if err := json.Unmarshal([]byte(f.got[1].body), &back); err != nil || back.ID != "d1" || back.Attempt != 2 || back.Event.ID != d.Event.ID {
		t.Errorf("message = %s", f.got[1].body)
	}
}

// failingStore fails every write.
type failingStore struct{}

func (failingStore) Put(context.Context, audit.Entry, time.Time) (bool, error) {
	return false, errors.New("throttled")
}
func (failingStore) Query(context.Context, audit.Query) (audit.Page, error) { return audit.Page{}, nil }

func TestMalformedMessagesAreDroppedAndFailuresReportedPerItem(t *testing.T) {
	now := time.Now()
	detail, _ := json.Marshal(event.WebhookTestEvent("wh", event.Subject{}, now))
	good := fmt.Sprintf(`{"id":"1","source":"secureai.gateway","detail-type":"webhook:test","detail":%s}`, detail)
	h := sqsqueue.Audit(&audit.Writer{Store: failingStore{}}, slog.New(slog.DiscardHandler))
	resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "bad", Body: "not json"},
		{MessageId: "good", Body: good},
	}})
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "good" {
		t.Errorf("response = %+v, %v; want only the message whose write failed back", resp, err)
	}

	wh := sqsqueue.Webhooks(&webhook.Dispatcher{Log: slog.New(slog.DiscardHandler)}, slog.New(slog.DiscardHandler))
	ev, _ := json.Marshal(event.WebhookTestEvent("wh", event.Subject{}, now))
	resp, err = wh(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "attempt 9", Body: fmt.Sprintf(`{"deliveryId":"d","endpointId":"wh","attempt":9,"event":%s}`, ev)},
		{MessageId: "no event", Body: `{"deliveryId":"d","endpointId":"wh","attempt":1,"event":{}}`},
	}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Errorf("malformed deliveries: %+v, %v; want dropped", resp, err)
	}
}

// barrierStore's Put returns only once n Puts are in flight together.
type barrierStore struct {
	failingStore
	arrived chan struct{}
	n       int
}

func (b barrierStore) Put(ctx context.Context, _ audit.Entry, _ time.Time) (bool, error) {
	b.arrived <- struct{}{}
	for len(b.arrived) < b.n {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return true, nil
}

// A batch's messages run together: one slow message (a webhook attempt waiting for its timeout)
// does not hold the others back until the function's own timeout.
func TestABatchsMessagesRunConcurrently(t *testing.T) {
	const n = 3
	h := sqsqueue.Audit(&audit.Writer{Store: barrierStore{arrived: make(chan struct{}, n), n: n}}, slog.New(slog.DiscardHandler))
	var batch events.SQSEvent
	for i := range n {
		detail, _ := json.Marshal(event.WebhookTestEvent("wh", event.Subject{}, time.Now()))
		batch.Records = append(batch.Records, events.SQSMessage{MessageId: fmt.Sprint(i),
			Body: fmt.Sprintf(`{"id":"1","source":"secureai.gateway","detail-type":"webhook:test","detail":%s}`, detail)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := h(ctx, batch)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("response = %+v, %v: the messages ran one after another", resp, err)
	}
}
