package dynamostore_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// A check of a key with a user on a cold instance reads both breakers from DynamoDB in one
// BatchGetItem; warm checks make no call.
func TestACheckReadsAKeysAndItsUsersBreakersInOneCall(t *testing.T) {
	cfg := testenv.AWSConfig(t, testenv.Moto(t))
	rec := &countingTransport{}
	cfg.HTTPClient = &http.Client{Transport: rec}
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
