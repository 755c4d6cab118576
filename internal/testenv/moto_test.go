package testenv_test

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/secureai-gateway/gateway/internal/testenv"
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
