package functest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// consumerKinds are the SQS-triggered functions and their events/<function>-<kind>.json.
var consumerKinds = map[string][]string{
	"webhook-dispatcher": {"event", "bad-body"},
	"audit-writer":       {"event", "bad-body"},
	"event-relay":        {"event", "bad-body"},
}

func isConsumerEvent(name string) bool {
	if strings.HasPrefix(name, "refund-sweep-") { // a scheduled event: refund_test.go runs it
		return true
	}
	for fn := range consumerKinds {
		if strings.HasPrefix(name, fn+"-") {
			return true
		}
	}
	return false
}

// sampleEventID is the event id in events/*-event.json.
const sampleEventID = "evt_4f0c2b8e9d7a41c3b5e6f7a8091b2c3d"

// TestConsumersHandleTheirSQSEvents runs the built webhook-dispatcher, audit-writer and
// event-relay under the emulator with their events/ samples, against DynamoDB, SQS and
// EventBridge on moto: the audit writer stores one entry however often the event comes; the
// dispatcher fans the event out into a delivery message, whose attempt then reaches a receiver;
// the relay puts the outbox's event on the bus, where a rule delivers it; a malformed message is
// dropped, not retried.
func TestConsumersHandleTheirSQSEvents(t *testing.T) {
	root := testenv.RepoRoot(t)
	var names []string
	for fn := range consumerKinds {
		names = append(names, fn)
	}
	built := make(chan map[string]string, 1)
	go func() { built <- buildAll(t, root, names) }()

	ctx := context.Background()
	endpoint := testenv.Moto(t)
	cfg := testenv.AWSConfig(t, endpoint)
	db, sqc := dynamodb.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	tables := dynamostore.Tables{APIKeys: testenv.UniqueName(t, "keys"), Webhooks: testenv.UniqueName(t, "wh"),
		WebhookAttempts: testenv.UniqueName(t, "wha"), Audit: testenv.UniqueName(t, "audit")}
	if err := dynamostore.CreateTables(ctx, db, tables); err != nil {
		t.Fatal(err)
	}
	q, err := sqc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(testenv.UniqueName(t, "webhooks"))})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var posted []http.Header
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		posted = append(posted, r.Header.Clone())
		mu.Unlock()
	}))
	defer receiver.Close()
	url, evs := receiver.URL, []string{"api:model_failover"}
	ep, err := webhook.Create(ctx, webhook.Input{URL: &url, Events: &evs}, webhook.NewGuard(webhook.ReachPrivate), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	store := dynamostore.New(db, tables)
	if err := store.CreateEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	bus := testenv.UniqueName(t, "relay-bus")
	if _, err := eventbridge.NewFromConfig(cfg).CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(bus)}); err != nil {
		t.Fatal(err)
	}
	subscriber := busQueue(t, cfg, bus)
	env := append(awsEnv(motoCreds, endpoint),
		"SECUREAI_TABLE_API_KEYS="+tables.APIKeys, // every function's (Globals), unused here
		"SECUREAI_TABLE_WEBHOOKS="+tables.Webhooks, "SECUREAI_TABLE_WEBHOOK_ATTEMPTS="+tables.WebhookAttempts,
		"SECUREAI_TABLE_AUDIT="+tables.Audit, "SECUREAI_WEBHOOK_QUEUE_URL="+aws.ToString(q.QueueUrl),
		"SECUREAI_WEBHOOKS_ALLOW_PRIVATE=true", // the receiver is on loopback
		"SECUREAI_EVENT_BUS="+bus,
	)
	bins := <-built
	if bins == nil {
		t.FailNow()
	}
	sample := func(t *testing.T, fn, kind string) []byte {
		b, err := os.ReadFile(filepath.Join(root, "events", fn+"-"+kind+".json"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	invoke := func(t *testing.T, l *testenv.Lambda, payload []byte) {
		t.Helper()
		var resp events.SQSEventResponse
		out := l.Invoke(t, payload)
		if err := json.NewDecoder(bytes.NewReader(out)).Decode(&resp); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("response %s (%v), want no failed items\n%s", out, err, l.Output())
		}
	}

	t.Run("audit-writer", func(t *testing.T) {
		l := testenv.StartLambda(t, bins["audit-writer"], env...)
		invoke(t, l, sample(t, "audit-writer", "event"))
		invoke(t, l, sample(t, "audit-writer", "event")) // redelivered
		invoke(t, l, sample(t, "audit-writer", "bad-body"))
		out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tables.Audit)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Items) != 1 || !strings.Contains(toString(out.Items[0]["entry"]), sampleEventID) {
			t.Fatalf("audit table holds %d items, want the one entry of %s", len(out.Items), sampleEventID)
		}
	})

	t.Run("event-relay", func(t *testing.T) {
		l := testenv.StartLambda(t, bins["event-relay"], env...)
		invoke(t, l, sample(t, "event-relay", "event"))
		invoke(t, l, sample(t, "event-relay", "bad-body"))
		if got := subscriber.types(t); len(got) != 1 || got[0] != "api:model_failover" {
			t.Fatalf("the bus's rule delivered %v, want the one relayed api:model_failover\n%s", got, l.Output())
		}
	})

	t.Run("webhook-dispatcher", func(t *testing.T) {
		l := testenv.StartLambda(t, bins["webhook-dispatcher"], env...)
		invoke(t, l, sample(t, "webhook-dispatcher", "event"))
		invoke(t, l, sample(t, "webhook-dispatcher", "bad-body"))
		msgs, err := sqc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
		if err != nil || len(msgs.Messages) != 1 {
			t.Fatalf("delivery queue has %d messages (%v), want one for the one endpoint", len(msgs.Messages), err)
		}
		m := msgs.Messages[0]
		batch, _ := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), EventSource: "aws:sqs"}}})
		invoke(t, l, batch)
		mu.Lock()
		defer mu.Unlock()
		if len(posted) != 1 || posted[0].Get("X-SecureAI-Delivery") != webhook.DeliveryID(sampleEventID, ep.ID) {
			t.Fatalf("receiver got %d posts (%v)\n%s", len(posted), posted, l.Output())
		}
	})
}

func toString(av any) string {
	b, _ := json.Marshal(av)
	return string(b)
}
