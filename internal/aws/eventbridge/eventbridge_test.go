package eventbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	eb "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/secureai-gateway/gateway/internal/aws/eventbridge"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fakeAPI answers PutEvents with per-entry error codes chosen by fail(callIndex, detailType).
type fakeAPI struct {
	mu    sync.Mutex
	calls [][]types.PutEventsRequestEntry
	fail  func(call int, detailType string) string
}

func (f *fakeAPI) PutEvents(_ context.Context, in *eb.PutEventsInput, _ ...func(*eb.Options)) (*eb.PutEventsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := len(f.calls)
	f.calls = append(f.calls, in.Entries)
	out := &eb.PutEventsOutput{}
	for _, e := range in.Entries {
		code := f.fail(call, aws.ToString(e.DetailType))
		r := types.PutEventsResultEntry{EventId: aws.String("x")}
		if code != "" {
			r = types.PutEventsResultEntry{ErrorCode: aws.String(code), ErrorMessage: aws.String("nope")}
			out.FailedEntryCount++
		}
		out.Entries = append(out.Entries, r)
	}
	return out, nil
}

func events(n int) []event.Event {
	out := make([]event.Event, n)
	for i := range out {
		out[i] = event.WebhookTestEvent(fmt.Sprint(i), event.Subject{}, time.Now())
	}
	return out
}

func TestAtMostTenEntriesPerCall(t *testing.T) {
	api := &fakeAPI{fail: func(int, string) string { return "" }}
	if err := eventbridge.New(api, "bus").Send(context.Background(), events(23)); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, c := range api.calls {
		sizes = append(sizes, len(c))
		for _, e := range c {
			if aws.ToString(e.Source) != "secureai.gateway" || aws.ToString(e.DetailType) != "webhook:test" || aws.ToString(e.EventBusName) != "bus" {
				t.Errorf("entry = %+v", e)
			}
		}
	}
	if fmt.Sprint(sizes) != "[10 10 3]" {
		t.Errorf("call sizes = %v", sizes)
	}
}

func TestOnlyRetryableEntriesOfAPartialFailureAreRetried(t *testing.T) {
	evs := []event.Event{
		event.WebhookTestEvent("a", event.Subject{}, time.Now()),
		event.ModelFailoverEvent(event.Failover{}, time.Now()),
		event.LimitReachedEvent(event.Limit{}, time.Now()),
	}
	// First call: the failover is throttled, the limit event is malformed. Then all succeed.
	api := &fakeAPI{fail: func(call int, dt string) string {
		switch {
		case call == 0 && dt == "api:model_failover":
			return "ThrottlingException"
		case dt == "api:limit_reached":
			return "MalformedDetail"
		}
		return ""
	}}
	err := eventbridge.New(api, "bus").Send(context.Background(), evs)
	var pe *eventbridge.PutError
	if !errors.As(err, &pe) || len(pe.Failed) != 1 || pe.Failed[0].EventID != evs[2].ID || pe.Failed[0].Code != "MalformedDetail" {
		t.Fatalf("Send = %v, want only the malformed entry failed", err)
	}
	if len(api.calls) != 2 || len(api.calls[1]) != 1 || aws.ToString(api.calls[1][0].DetailType) != "api:model_failover" {
		t.Errorf("calls = %d (second %v), want one retry of the throttled entry", len(api.calls), api.calls[1:])
	}
}

func TestRetriesEndAndReportTheEntry(t *testing.T) {
	api := &fakeAPI{fail: func(int, string) string { return "InternalFailure" }}
	err := eventbridge.New(api, "bus").Send(context.Background(), events(1))
	var pe *eventbridge.PutError
	if !errors.As(err, &pe) || pe.Failed[0].Code != "InternalFailure" {
		t.Fatalf("Send = %v", err)
	}
	if len(api.calls) != 3 {
		t.Errorf("calls = %d, want 3 (one and two retries)", len(api.calls))
	}
}

func TestDecodeRefusesWhatIsNotAGatewayEvent(t *testing.T) {
	good := event.WebhookTestEvent("wh", event.Subject{}, time.Now())
	detail, _ := json.Marshal(good)
	env := func(source, dt, detail string) []byte {
		return fmt.Appendf(nil, `{"id":"1","source":%q,"detail-type":%q,"detail":%s}`, source, dt, detail)
	}
	if got, err := eventbridge.Decode(env("secureai.gateway", "webhook:test", string(detail))); err != nil || got.ID != good.ID {
		t.Fatalf("Decode = %+v, %v", got, err)
	}
	for name, body := range map[string][]byte{
		"not JSON":            []byte("x"),
		"another source":      env("aws.ec2", "webhook:test", string(detail)),
		"detail-type differs": env("secureai.gateway", "api:model_failover", string(detail)),
		"detail not an event": env("secureai.gateway", "webhook:test", `{"id":"x"}`),
	} {
		if _, err := eventbridge.Decode(body); fault.KindOf(err) != fault.InvalidRequest {
			t.Errorf("%s: Decode = %v, want an invalid-request fault", name, err)
		}
	}
}

// On moto: the entry reaches a queue behind a rule matching on source and detail-type, with the
// envelope as its detail.
func TestPutEventsReachesARuleOnTheBus(t *testing.T) {
	ctx := context.Background()
	cfg := testenv.AWSConfig(t, testenv.Moto(t))
	ebc, sqc := eb.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	bus := testenv.UniqueName(t, "bus")
	if _, err := ebc.CreateEventBus(ctx, &eb.CreateEventBusInput{Name: aws.String(bus)}); err != nil {
		t.Fatal(err)
	}
	q, err := sqc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(testenv.UniqueName(t, "q"))})
	if err != nil {
		t.Fatal(err)
	}
	attrs, _ := sqc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
	if _, err := ebc.PutRule(ctx, &eb.PutRuleInput{Name: aws.String("failovers"), EventBusName: aws.String(bus),
		EventPattern: aws.String(`{"source":["secureai.gateway"],"detail-type":["api:model_failover"]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ebc.PutTargets(ctx, &eb.PutTargetsInput{Rule: aws.String("failovers"), EventBusName: aws.String(bus),
		Targets: []types.Target{{Id: aws.String("q"), Arn: aws.String(attrs.Attributes["QueueArn"])}}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	failover := event.ModelFailoverEvent(event.Failover{FailedModel: "a", NextModel: "b", Reason: "timeout", Time: now}, now)
	p := event.NewAsync(eventbridge.New(ebc, bus), slog.New(slog.DiscardHandler))
	p.Publish(ctx, event.WebhookTestEvent("wh", event.Subject{}, now), failover)
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := p.Flush(fctx); err != nil || p.Stats().Published != 2 {
		t.Fatalf("Flush = %v, stats %+v", err, p.Stats())
	}
	out, err := sqc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("queue got %d messages (%v), want only the failover", len(out.Messages), err)
	}
	got, err := eventbridge.Decode([]byte(aws.ToString(out.Messages[0].Body)))
	if err != nil || got.ID != failover.ID || string(got.Data) == "" {
		t.Fatalf("Decode = %+v, %v", got, err)
	}
	var a, b map[string]any
	_ = json.Unmarshal(got.Data, &a)
	_ = json.Unmarshal(failover.Data, &b)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("data = %v, want %v", a, b)
	}
}
