package main

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	eb "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/secureai-gateway/gateway/internal/aws/eventbridge"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Against a stack's tables (DynamoDB on moto), the CLI refuses what the admin API refuses and
// puts each change's admin event on the stack's bus, where the audit writer takes it.
func TestTheCLIAuditsItsChangesOnTheStacksBus(t *testing.T) {
	ctx := context.Background()
	endpoint := testenv.Moto(t)
	cfg := testenv.AWSConfig(t, endpoint)
	// The CLI reads the default credential chain, as it does against a real account.
	t.Setenv("AWS_ENDPOINT_URL", endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("SECUREAI_CONFIG", "")
	t.Setenv("SECUREAI_DEMO", "") // off against DynamoDB, as in a function

	tables := dynamostore.Tables{APIKeys: testenv.UniqueName(t, "keys"), Users: testenv.UniqueName(t, "users")}
	if err := dynamostore.CreateTables(ctx, dynamodb.NewFromConfig(cfg), tables); err != nil {
		t.Fatal(err)
	}
	ebc, sqc := eb.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	bus := testenv.UniqueName(t, "bus")
	if _, err := ebc.CreateEventBus(ctx, &eb.CreateEventBusInput{Name: aws.String(bus)}); err != nil {
		t.Fatal(err)
	}
	q, err := sqc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(testenv.UniqueName(t, "audit"))})
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := sqc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ebc.PutRule(ctx, &eb.PutRuleInput{Name: aws.String("audit"), EventBusName: aws.String(bus),
		EventPattern: aws.String(`{"source":["secureai.gateway"]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ebc.PutTargets(ctx, &eb.PutTargetsInput{Rule: aws.String("audit"), EventBusName: aws.String(bus),
		Targets: []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(attrs.Attributes["QueueArn"])}}}); err != nil {
		t.Fatal(err)
	}

	cli := func(args ...string) error {
		var out bytes.Buffer
		return run(ctx, args[0], append([]string{"-table", tables.APIKeys, "-users-table", tables.Users, "-event-bus", bus}, args[1:]...), &out)
	}
	if err := cli("create-key", "-name", "ops", "-admin", "-policies", "public"); err != nil {
		t.Fatalf("create-key: %v", err)
	}
	for _, bad := range [][]string{
		{"create-key", "-name", "bad", "-policies", "no-such-policy"},
		{"create-key", "-name", "bad", "-models", "demo/ok"}, // no demo provider in a function by default
	} {
		if err := cli(bad...); err == nil {
			t.Errorf("admin %v was accepted; the admin API refuses it", bad)
		}
	}

	var types []string
	for len(types) < 2 {
		out, err := sqc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			ev, err := eventbridge.Decode([]byte(aws.ToString(m.Body)))
			if err != nil {
				t.Fatal(err)
			}
			types = append(types, string(ev.Type))
		}
	}
	slices.Sort(types)
	// The key and the user it bills, created with it; nothing for the refused ones.
	if want := []string{"admin:api_key_created", "admin:user_updated"}; !slices.Equal(types, want) {
		t.Errorf("events on the bus: %v, want %v", types, want)
	}
}
