package sqsqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/secureai-gateway/gateway/internal/aws/sqsqueue"
	"github.com/secureai-gateway/gateway/internal/event"
)

// batchSQS records each SendMessageBatch and refuses the entries numbered in refuse.
type batchSQS struct {
	batches [][]string // message bodies
	refuse  map[string]bool
}

func (f *batchSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	var bodies []string
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		bodies = append(bodies, aws.ToString(e.MessageBody))
		if f.refuse[aws.ToString(e.Id)] {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InvalidMessageContents"), Message: aws.String("no")})
		}
	}
	f.batches = append(f.batches, bodies)
	return out, nil
}

func TestTheOutboxHoldsOneMessagePerEventTenPerCall(t *testing.T) {
	f := &batchSQS{}
	var evs []event.Event
	for range 12 {
		evs = append(evs, event.WebhookTestEvent("wh", event.Subject{}, time.Now()))
	}
	if err := (sqsqueue.Outbox{API: f, URL: "u"}).Send(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	if len(f.batches) != 2 || len(f.batches[0]) != 10 || len(f.batches[1]) != 2 {
		t.Fatalf("batches of %v, want 10 and 2", f.batches)
	}
	var back event.Event
	if err := json.Unmarshal([]byte(f.batches[1][1]), &back); err != nil || back.ID != evs[11].ID {
		t.Errorf("message %s (%v), want event %s", f.batches[1][1], err, evs[11].ID)
	}

	f = &batchSQS{refuse: map[string]bool{"0": true}}
	if err := (sqsqueue.Outbox{API: f, URL: "u"}).Send(context.Background(), evs[:1]); err == nil || !strings.Contains(err.Error(), "InvalidMessageContents") {
		t.Errorf("a refused entry: err %v, want one naming SQS's code", err)
	}
}

// sender records what the relay puts on the bus, failing when err is set.
type sender struct {
	got []event.Event
	err error
}

func (s *sender) Send(_ context.Context, evs []event.Event) error {
	if s.err != nil {
		return s.err
	}
	s.got = append(s.got, evs...)
	return nil
}

func TestTheRelayPutsEachEventOnTheBusAndDropsWhatIsNoEvent(t *testing.T) {
	e := event.WebhookTestEvent("wh", event.Subject{}, time.Now())
	body, _ := json.Marshal(e)
	batch := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "event", Body: string(body)},
		{MessageId: "not json", Body: "{"},
		{MessageId: "not an event", Body: `{"id":"x"}`},
	}}
	bus := &sender{}
	resp, err := sqsqueue.Relay(bus, slog.New(slog.DiscardHandler))(context.Background(), batch)
	if err != nil || len(resp.BatchItemFailures) != 0 || len(bus.got) != 1 || bus.got[0].ID != e.ID {
		t.Errorf("response %+v, %v, put %v; want the one event put and the others dropped", resp, err, bus.got)
	}

	bus = &sender{err: errors.New("throttled")}
	resp, _ = sqsqueue.Relay(bus, slog.New(slog.DiscardHandler))(context.Background(), batch)
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "event" {
		t.Errorf("a failed put: %+v, want the event's message back", resp)
	}
}
