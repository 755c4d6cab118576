package dynamostore_test

import (
	"context"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/sharedhealth"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
)

func TestReceiptsContract(t *testing.T) {
	client := newClient(t)
	storetest.RunReceipts(t, func(t *testing.T) receipt.Store { return newGovernanceStore(t, client) })
}

// newGovernanceStore gives each test its own receipts and breaker tables.
func newGovernanceStore(t *testing.T, client *dynamodb.Client) *dynamostore.Store {
	t.Helper()
	tables := uniqueTables(t)
	tables.Receipts, tables.CircuitBreakers = tables.APIKeys+"-receipts", tables.APIKeys+"-breakers"
	if err := dynamostore.CreateTables(context.Background(), client, tables); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, name := range []string{tables.APIKeys, tables.Idempotency, tables.Receipts, tables.CircuitBreakers} {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		}
	})
	return dynamostore.New(client, tables)
}

func TestBreakersContract(t *testing.T) {
	// The contract counts concurrent violations: a server whose writes are atomic, as DynamoDB's
	// are (moto's threaded server is not; testenv.MotoSerial).
	client := dynamodb.NewFromConfig(testenv.AWSConfig(t, testenv.MotoSerial(t)))
	storetest.RunBreakers(t, func(t *testing.T) breaker.Store { return newGovernanceStore(t, client) })
}

func TestHealthContract(t *testing.T) {
	client := newClient(t)
	storetest.RunHealth(t, func(t *testing.T) sharedhealth.Store {
		tables := uniqueTables(t)
		tables.ProviderHealth = tables.APIKeys + "-health"
		if err := dynamostore.CreateTables(context.Background(), client, tables); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, name := range []string{tables.APIKeys, tables.Idempotency, tables.ProviderHealth} {
				_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
			}
		})
		return dynamostore.New(client, tables)
	})
}
