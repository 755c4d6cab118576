package templatetest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	eb "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/aws/eventbridge"
	"github.com/secureai-gateway/gateway/internal/aws/sqsqueue"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
	"github.com/secureai-gateway/gateway/internal/webhook"
	"go.yaml.in/yaml/v4"
)

// rule is an EventBridge rule of the template and the function consuming its queue.
type rule struct {
	id, queue, function string
	pattern             string // JSON
	transformer         bool
}

// getAtt returns X of `!GetAtt X.Arn`.
func getAtt(n *yaml.Node) string {
	if n == nil || n.Tag != "!GetAtt" {
		return ""
	}
	id, _, _ := strings.Cut(n.Value, ".")
	return id
}

// queueMapping is an AWS::Lambda::EventSourceMapping of the template: a function fed by a queue.
type queueMapping struct {
	id, queue, function string
	props               *yaml.Node
}

func (tp template) queueMappings() []queueMapping {
	var out []queueMapping
	for _, id := range tp.resources("AWS::Lambda::EventSourceMapping") {
		props := get(tp.resource(id), "Properties")
		out = append(out, queueMapping{id: id, queue: getAtt(get(props, "EventSourceArn")), function: ref(get(props, "FunctionName")), props: props})
	}
	return out
}

func (tp template) rules(t *testing.T) []rule {
	t.Helper()
	consumers := map[string]string{} // queue → function
	for _, m := range tp.queueMappings() {
		consumers[m.queue] = m.function
	}
	var out []rule
	for _, id := range tp.resources("AWS::Events::Rule") {
		props := get(tp.resource(id), "Properties")
		var pattern any
		if err := get(props, "EventPattern").Decode(&pattern); err != nil {
			t.Fatalf("%s EventPattern: %v", id, err)
		}
		raw, err := json.Marshal(pattern)
		if err != nil {
			t.Fatal(err)
		}
		targets := items(get(props, "Targets"))
		if len(targets) != 1 {
			t.Fatalf("%s has %d targets, want one queue", id, len(targets))
		}
		q := getAtt(get(targets[0], "Arn"))
		out = append(out, rule{id: id, queue: q, function: consumers[q], pattern: string(raw),
			transformer: get(targets[0], "InputTransformer") != nil})
	}
	return out
}

// TestEventRulesRouteToConsumersWithDeadLetterAlarms checks the routing's shape: every rule
// matches on source and detail-type (the whole catalog), targets a queue without an input
// transformer, and the queue has a consumer, a dead-letter queue and an alarm on it.
func TestEventRulesRouteToConsumersWithDeadLetterAlarms(t *testing.T) {
	tp := loadTemplate(t, testenv.RepoRoot(t))
	rules := tp.rules(t)
	if len(rules) < 2 {
		t.Fatalf("rules = %v, want the webhook and audit rules", rules)
	}
	var catalog []string
	for _, c := range event.Catalog() {
		catalog = append(catalog, string(c))
	}
	alarmed := map[string]bool{}
	for _, a := range tp.resources("AWS::CloudWatch::Alarm") {
		for _, d := range items(get(tp.resource(a), "Properties", "Dimensions")) {
			alarmed[getAtt(get(d, "Value"))] = true
		}
	}
	for _, r := range rules {
		t.Run(r.id, func(t *testing.T) {
			var p struct {
				Source     []string `json:"source"`
				DetailType []string `json:"detail-type"`
			}
			if err := json.Unmarshal([]byte(r.pattern), &p); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Source, []string{eventbridge.Source}) || !slices.Equal(p.DetailType, catalog) {
				t.Errorf("pattern %s, want source [%s] and detail-type = the catalog %v", r.pattern, eventbridge.Source, catalog)
			}
			if r.transformer {
				t.Error("target has an input transformer")
			}
			if scalar(tp.resource(r.queue), "Type") != "AWS::SQS::Queue" || r.function == "" {
				t.Fatalf("target %s is not an SQS queue with a consumer function", r.queue)
			}
			dlq := getAtt(get(tp.resource(r.queue), "Properties", "RedrivePolicy", "deadLetterTargetArn"))
			if dlq == "" || !alarmed[dlq] {
				t.Errorf("queue %s: dead-letter queue %q without an alarm on its depth", r.queue, dlq)
			}
		})
	}
}

// TestEventsFlowFromPutEventsThroughTheTemplateRulesToTheStores runs the cloud path on moto:
// the gateway's publisher puts an event on a bus carrying the template's rules, each rule's queue
// feeds its consumer's handler, and the result lands in DynamoDB (and, for webhooks, at a
// receiver).
func TestEventsFlowFromPutEventsThroughTheTemplateRulesToTheStores(t *testing.T) {
	ctx := context.Background()
	tp := loadTemplate(t, testenv.RepoRoot(t))
	cfg := testenv.AWSConfig(t, testenv.Moto(t))
	ebc, sqc, db := eb.NewFromConfig(cfg), sqs.NewFromConfig(cfg), dynamodb.NewFromConfig(cfg)

	bus := testenv.UniqueName(t, "bus")
	if _, err := ebc.CreateEventBus(ctx, &eb.CreateEventBusInput{Name: aws.String(bus)}); err != nil {
		t.Fatal(err)
	}
	queueURL := map[string]string{} // logical id → URL
	for _, r := range tp.rules(t) {
		q, err := sqc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(testenv.UniqueName(t, r.queue))})
		if err != nil {
			t.Fatal(err)
		}
		attrs, err := sqc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		name := testenv.UniqueName(t, r.id)
		if _, err := ebc.PutRule(ctx, &eb.PutRuleInput{Name: aws.String(name), EventBusName: aws.String(bus), EventPattern: aws.String(r.pattern)}); err != nil {
			t.Fatal(err)
		}
		if _, err := ebc.PutTargets(ctx, &eb.PutTargetsInput{Rule: aws.String(name), EventBusName: aws.String(bus),
			Targets: []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)])}}}); err != nil {
			t.Fatal(err)
		}
		queueURL[r.queue] = aws.ToString(q.QueueUrl)
	}

	tables := dynamostore.Tables{APIKeys: testenv.UniqueName(t, "keys"), Webhooks: testenv.UniqueName(t, "wh"),
		WebhookAttempts: testenv.UniqueName(t, "wha"), Audit: testenv.UniqueName(t, "audit")}
	if err := dynamostore.CreateTables(ctx, db, tables); err != nil {
		t.Fatal(err)
	}
	store := dynamostore.New(db, tables)

	var mu sync.Mutex
	var posted [][]byte
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posted = append(posted, b)
		mu.Unlock()
	}))
	defer receiver.Close()
	guard := webhook.NewGuard(webhook.ReachPrivate)
	url, evs := receiver.URL, []string{"*"}
	ep, err := webhook.Create(ctx, webhook.Input{URL: &url, Events: &evs}, guard, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CreateEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	handlers := map[string]sqsqueue.Handler{
		"WebhookDispatcherFunction": sqsqueue.Webhooks(&webhook.Dispatcher{Store: store, Log: log,
			Queue:  sqsqueue.Queue{API: sqc, URL: queueURL["WebhookQueue"]},
			Poster: &webhook.Poster{Client: guard.Client(), Now: time.Now}}, log),
		"AuditWriterFunction": sqsqueue.Audit(&audit.Writer{Store: store.AuditLog()}, log),
	}

	now := time.Now()
	sent := event.ModelFailoverEvent(event.Failover{FailedModel: "openai/gpt-5-nano", Reason: "rate_limit", NextModel: "anthropic/claude-sonnet-4",
		LatencyMs: 321, Subject: event.Subject{UserID: "u1", APIKeyID: "key_1", RequestID: "req_1"}, Time: now}, now)
	if err := eventbridge.New(ebc, bus).Send(ctx, []event.Event{sent}); err != nil {
		t.Fatal(err)
	}
	sentJSON, _ := json.Marshal(sent)

	for _, r := range tp.rules(t) {
		t.Run(r.id, func(t *testing.T) {
			h, ok := handlers[r.function]
			if !ok {
				t.Fatalf("this test does not know the consumer %s of %s; add its handler", r.function, r.queue)
			}
			msgs := receive(t, sqc, queueURL[r.queue], 1)
			var env struct {
				Source     string          `json:"source"`
				DetailType string          `json:"detail-type"`
				Detail     json.RawMessage `json:"detail"`
			}
			if err := json.Unmarshal([]byte(aws.ToString(msgs[0].Body)), &env); err != nil {
				t.Fatal(err)
			}
			if env.Source != eventbridge.Source || env.DetailType != string(sent.Type) || !sameJSON(t, env.Detail, sentJSON) {
				t.Fatalf("queue got source %q detail-type %q detail %s; want the event %s", env.Source, env.DetailType, env.Detail, sentJSON)
			}
			consume(t, h, msgs)

			switch r.function {
			case "AuditWriterFunction":
				q, _ := audit.Parse(audit.Params{}, time.Now().Add(time.Second))
				page, err := store.AuditLog().Query(ctx, q)
				if err != nil || len(page.Entries) != 1 || page.Entries[0].ID != sent.ID || page.Entries[0].Metadata.RequestID != "req_1" {
					t.Fatalf("audit log = %+v, %v", page, err)
				}
			case "WebhookDispatcherFunction":
				// The fan-out put one delivery message on the same queue; its attempt posts.
				consume(t, h, receive(t, sqc, queueURL[r.queue], 1))
				mu.Lock()
				defer mu.Unlock()
				if len(posted) != 1 || !sameJSON(t, posted[0], sentJSON) {
					t.Fatalf("receiver got %q", posted)
				}
				as, err := store.Attempts(ctx, ep.ID, 10)
				if err != nil || len(as) != 1 || !as[0].Succeeded() {
					t.Fatalf("attempts = %+v, %v", as, err)
				}
			}
		})
	}
}

func receive(t *testing.T, c *sqs.Client, url string, n int) []sqstypes.Message {
	t.Helper()
	var got []sqstypes.Message
	for deadline := time.Now().Add(10 * time.Second); len(got) < n && time.Now().Before(deadline); {
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, out.Messages...)
	}
	if len(got) != n {
		t.Fatalf("queue %s: %d messages, want %d", url, len(got), n)
	}
	return got
}

func consume(t *testing.T, h sqsqueue.Handler, msgs []sqstypes.Message) {
	t.Helper()
	var batch events.SQSEvent
	for _, m := range msgs {
		batch.Records = append(batch.Records, events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body)})
	}
	resp, err := h(context.Background(), batch)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handler = %+v, %v", resp, err)
	}
}

// sameJSON compares parsed JSON: moto re-serialises detail.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
