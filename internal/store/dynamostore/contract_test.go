package dynamostore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// TestKeysContract runs on the single-threaded moto: its concurrent updates need atomic
// conditional writes, as DynamoDB's are (the threaded one lost one of five, getmoto/moto#7166).
func TestKeysContract(t *testing.T) {
	client := dynamodb.NewFromConfig(testenv.AWSConfig(t, testenv.MotoSerial(t)))
	storetest.RunKeys(t, func(t *testing.T) storetest.KeyStore {
		return newStore(t, client)
	})
}

func newStore(t *testing.T, client *dynamodb.Client) *dynamostore.Store {
	t.Helper()
	s, _ := newStoreTables(t, client)
	return s
}

// newStoreTables gives each test its own tables, so counts and listings see only that test's items.
func newStoreTables(t *testing.T, client *dynamodb.Client) (*dynamostore.Store, dynamostore.Tables) {
	t.Helper()
	tables := uniqueTables(t)
	if err := dynamostore.CreateTables(context.Background(), client, tables); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// moto may be shared by the whole run; leave it as found.
		for _, name := range []string{tables.APIKeys, tables.Idempotency} {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		}
	})
	return dynamostore.New(client, tables), tables
}

var unsafeTableChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

func uniqueTables(t *testing.T) dynamostore.Tables {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := unsafeTableChars.ReplaceAllString(t.Name(), "_")
	if len(name) > 200 {
		name = name[:200]
	}
	prefix := name + "-" + hex.EncodeToString(b[:])
	return dynamostore.Tables{APIKeys: prefix + "-keys", Idempotency: prefix + "-idem"}
}
