package dynamostore_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
)

func TestExpired(t *testing.T) {
	now := time.Unix(1_800_000_000, 500)
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	tests := []struct {
		name string
		item map[string]types.AttributeValue
		want bool
	}{
		{"no ttl never expires", map[string]types.AttributeValue{}, false},
		{"ttl in the future", map[string]types.AttributeValue{"ttl": n("1800000001")}, false},
		{"ttl this second has passed", map[string]types.AttributeValue{"ttl": n("1800000000")}, true},
		{"ttl in the past", map[string]types.AttributeValue{"ttl": n("1")}, true},
		{"unreadable ttl counts as expired", map[string]types.AttributeValue{"ttl": &types.AttributeValueMemberS{Value: "soon"}}, true},
		{"from TTL(now+1s)", map[string]types.AttributeValue{"ttl": dynamostore.TTL(now.Add(time.Second))}, false},
		{"TTL rounds up, never early", map[string]types.AttributeValue{"ttl": dynamostore.TTL(now.Add(time.Millisecond))}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := dynamostore.Expired(tc.item, now); got != tc.want {
				t.Errorf("Expired = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTTLConditionsOnMoto checks the expressions against a real DynamoDB implementation, which
// (like moto) keeps expired items until it gets round to deleting them.
func TestTTLConditionsOnMoto(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	table := uniqueTables(t).APIKeys
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}) })

	now := time.Now()
	put := func(pk string, expires time.Time, cond *expression.ConditionBuilder) error {
		in := &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, dynamostore.TTLAttribute: dynamostore.TTL(expires),
		}}
		if cond != nil {
			expr, err := expression.NewBuilder().WithCondition(*cond).Build()
			if err != nil {
				t.Fatal(err)
			}
			in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
		}
		_, err := client.PutItem(ctx, in)
		return err
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(put("stale", now.Add(-time.Hour), nil))
	must(put("live", now.Add(time.Hour), nil))

	cond := dynamostore.AbsentOrExpired("pk", now)
	if err := put("stale", now.Add(time.Hour), &cond); err != nil {
		t.Errorf("create over an expired item: %v", err)
	}
	if err := put("live", now.Add(time.Hour), &cond); !dynamostore.ConditionFailed(err) {
		t.Errorf("create over a live item = %v, want a failed condition", err)
	}
	if err := put("new", now.Add(time.Hour), &cond); err != nil {
		t.Errorf("create of a new item: %v", err)
	}

	must(put("gone", now.Add(-time.Minute), nil))
	expr, err := expression.NewBuilder().WithFilter(dynamostore.NotExpired(now)).Build()
	must(err)
	out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), FilterExpression: expr.Filter(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	must(err)
	if out.Count != 3 {
		t.Errorf("scan with NotExpired kept %d items, want 3 (stale-renewed, live, new)", out.Count)
	}
}
