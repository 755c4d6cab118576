package testenv_test

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

func TestMotoServesDynamoDB(t *testing.T) {
	for name, start := range map[string]func(testing.TB) string{"Moto": testenv.Moto, "MotoSerial": testenv.MotoSerial} {
		t.Run(name, func(t *testing.T) { motoServesDynamoDB(t, start) })
	}
}

func motoServesDynamoDB(t *testing.T, start func(testing.TB) string) {
	endpoint := start(t)
	if again := start(t); again != endpoint {
		t.Fatalf("second call started another server: %s vs %s", again, endpoint)
	}
	db := dynamodb.NewFromConfig(testenv.AWSConfig(t, endpoint))
	ctx := context.Background()
	table := testenv.UniqueName(t, "keys")

	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := db.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(out.TableNames, table) {
		t.Fatalf("ListTables = %v, want %s", out.TableNames, table)
	}
}

// The IAM-enforcing server refuses a user what its policy does not allow, and serves what it does.
func TestMotoIAMEnforcesPolicies(t *testing.T) {
	m := testenv.MotoIAM(t)
	ctx := context.Background()
	admin := sqs.NewFromConfig(m.Config(m.Admin))
	q, err := admin.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(testenv.UniqueName(t, "q"))})
	if err != nil {
		t.Fatal(err)
	}
	user := sqs.NewFromConfig(m.Config(m.User(t, testenv.UniqueName(t, "u"),
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sqs:SendMessage","Resource":"*"}]}`)))
	if _, err := user.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("x")}); err != nil {
		t.Errorf("an allowed SendMessage: %v", err)
	}
	if _, err := user.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl}); err == nil {
		t.Error("a ReceiveMessage the policy does not allow was served")
	}
}
