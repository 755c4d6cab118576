package cloud_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// The same Load serves an SQS-triggered consumer: testdata/sqsconsumer, built as a function is
// deployed and run under the Lambda emulator against the store on moto, reports exactly the
// message it could not process as a batch item failure.
func TestLoadServesAnSQSConsumer(t *testing.T) {
	fx := newFixture(t)
	bin := testenv.GoBuild(t, "./testdata/sqsconsumer")
	fn := testenv.StartLambda(t, bin)

	known, _ := apikey.Hash(fx.secret)
	unknown, _ := apikey.Hash(apikey.NewSecret())
	ev, err := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m-known", Body: known, EventSource: "aws:sqs"},
		{MessageId: "m-unknown", Body: unknown, EventSource: "aws:sqs"},
		{MessageId: "m-known-again", Body: known, EventSource: "aws:sqs"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	out := fn.Invoke(t, ev)
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("output %s is not an SQSEventResponse: %v\n%s", out, err, fn.Output())
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if !slices.Equal(failed, []string{"m-unknown"}) {
		t.Errorf("batch item failures %v, want [m-unknown]\n%s", failed, fn.Output())
	}
}
