package dynamostore_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/dynamostore"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/storetest"
	"github.com/secureai-gateway/gateway/internal/testenv"
)

// The limits and billing contracts run on the single-threaded moto: their concurrency tests need
// a server whose writes are atomic, as DynamoDB's are (testenv.MotoSerial).

func TestCounterContract(t *testing.T) {
	client := dynamodb.NewFromConfig(testenv.AWSConfig(t, testenv.MotoSerial(t)))
	storetest.RunCounter(t, func(t *testing.T) limits.Counter { return newAccountsStore(t, client) })
}

// newAccountsStore gives each test its own key, limits and users tables.
func newAccountsStore(t *testing.T, client *dynamodb.Client) *dynamostore.Store {
	t.Helper()
	tables := uniqueTables(t)
	tables.Idempotency = ""
	tables.Limits, tables.Users = tables.APIKeys+"-limits", tables.APIKeys+"-users"
	if err := dynamostore.CreateTables(context.Background(), client, tables); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, name := range []string{tables.APIKeys, tables.Limits, tables.Users} {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		}
	})
	return dynamostore.New(client, tables)
}

func TestUsersContract(t *testing.T) {
	client := dynamodb.NewFromConfig(testenv.AWSConfig(t, testenv.MotoSerial(t)))
	storetest.RunUsers(t, func(t *testing.T) billing.Store { return newAccountsStore(t, client) })
}
