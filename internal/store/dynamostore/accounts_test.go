package dynamostore_test

import (
	"context"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/reqstats"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// The limits and billing contracts run on the single-threaded moto: their concurrency tests need
// a server whose writes are atomic, as DynamoDB's are (testenv.MotoSerial).

func TestCounterContract(t *testing.T) {
	client := dynamodb.NewFromConfig(testenv.AWSConfig(t, testenv.MotoSerial(t)))
	storetest.RunCounter(t, func(t *testing.T) storetest.Counter { return newAccountsStore(t, client) })
}

// TestRequestStatsContract runs on the single-threaded moto too: its concurrent flushes need
// atomic ADDs, as DynamoDB's are.
func TestRequestStatsContract(t *testing.T) {
	client := dynamodb.NewFromConfig(testenv.AWSConfig(t, testenv.MotoSerial(t)))
	storetest.RunRequestStats(t, func(t *testing.T) reqstats.Store { return newAccountsStore(t, client) })
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

// countingTransport counts DynamoDB operations by their X-Amz-Target.
type countingTransport struct {
	mu  sync.Mutex
	ops []string
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.ops = append(c.ops, strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810."))
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countingTransport) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = nil
	return ops
}

// TestStoreCallsPerRequest pins the limiter's cost: admitting a request is one TransactWriteItems
// with no read before it, and so is a refusal, which names its window (a completion's cost, limits
// and reservation together, is TestAWarmRequestIsOneStoreCallEachWay's).
func TestStoreCallsPerRequest(t *testing.T) {
	ctx := context.Background()
	count := &countingTransport{}
	cfg := testenv.AWSConfig(t, testenv.MotoSerial(t))
	cfg.HTTPClient = &http.Client{Transport: count}
	s := newAccountsStore(t, dynamodb.NewFromConfig(cfg))
	key := &apikey.Key{ID: "k1", UserID: "u1"}
	count.take()

	counted := &ledger.Ledger{Store: s, Limits: true} // a deployment that bills nothing
	if _, err := counted.Admit(ctx, key, nil, billing.Estimate{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if ops := count.take(); !slices.Equal(ops, []string{"TransactWriteItems"}) {
		t.Errorf("Admit made %v, want one TransactWriteItems", ops)
	}
	full := &apikey.Key{ID: "k2", UserID: "u1", DailyLimit: 1}
	for range 2 {
		_, _ = counted.Admit(ctx, full, nil, billing.Estimate{}, time.Now())
	}
	if ops := count.take(); !slices.Equal(ops, []string{"TransactWriteItems", "TransactWriteItems"}) {
		t.Errorf("an admitted and a refused Admit made %v, want one TransactWriteItems each (the refusal names its window)", ops)
	}
}
