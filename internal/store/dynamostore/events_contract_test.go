package dynamostore_test

import (
	"context"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// newEventStore gives a test its own webhook and audit tables.
func newEventStore(t *testing.T, client *dynamodb.Client) *dynamostore.Store {
	t.Helper()
	tables := uniqueTables(t)
	tables.Webhooks, tables.WebhookAttempts, tables.Audit = tables.APIKeys+"-wh", tables.APIKeys+"-wha", tables.APIKeys+"-audit"
	if err := dynamostore.CreateTables(context.Background(), client, tables); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, name := range []string{tables.APIKeys, tables.Idempotency, tables.Webhooks, tables.WebhookAttempts, tables.Audit} {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		}
	})
	return dynamostore.New(client, tables)
}

func TestWebhooksContract(t *testing.T) {
	// Concurrent cases: moto served single-threaded, whose writes are atomic as DynamoDB's.
	client := dynamodb.NewFromConfig(testenv.AWSConfig(t, testenv.MotoSerial(t)))
	storetest.RunWebhooks(t, func(t *testing.T) webhook.Store { return newEventStore(t, client) })
}

func TestAuditContract(t *testing.T) {
	client := newClient(t)
	storetest.RunAudit(t, func(t *testing.T) audit.Store { return newEventStore(t, client).AuditLog() })
}
