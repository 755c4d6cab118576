package dynamostore_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/testenv"
)

// calls records the DynamoDB operation of every request the client sends.
type calls struct {
	inner aws.HTTPClient
	mu    sync.Mutex
	ops   []string
}

func (c *calls) Do(r *http.Request) (*http.Response, error) {
	_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".") // DynamoDB_20120810.GetItem
	c.mu.Lock()
	c.ops = append(c.ops, op)
	c.mu.Unlock()
	return c.inner.Do(r)
}

func (c *calls) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = nil
	return ops
}

// A check of a key with a user on a cold instance reads both breakers from DynamoDB in one
// BatchGetItem; warm checks make no call.
func TestACheckReadsAKeysAndItsUsersBreakersInOneCall(t *testing.T) {
	cfg := testenv.AWSConfig(t, testenv.Moto(t))
	rec := &calls{inner: awshttp.NewBuildableClient()}
	cfg.HTTPClient = rec
	store := newGovernanceStore(t, dynamodb.NewFromConfig(cfg))
	ctx := context.Background()
	opened := breaker.State{Subject: breaker.Subject{Kind: breaker.KindUser, ID: "u1"}, OpenedBy: "admin:ops", OpenedAt: time.Now()}
	if err := store.PutBreaker(ctx, opened); err != nil {
		t.Fatal(err)
	}
	rec.take()

	b := breaker.New(store, breaker.Config{}, nil)
	k := &apikey.Key{ID: "key_1", UserID: "u1"}
	for range 3 {
		if err := b.Check(ctx, k); err == nil {
			t.Fatal("the user's open breaker did not refuse the key")
		}
	}
	if got := rec.take(); !slices.Equal(got, []string{"BatchGetItem"}) {
		t.Errorf("DynamoDB calls %v, want one BatchGetItem", got)
	}
}
