package dynamostore

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/sharedhealth"
)

// The Store implements sharedhealth.Store over the provider health table, one item per model and
// instance, so instances never write the same item (no contention, no item growing with the
// fleet) and one Query per model reads every instance's report:
//
//	target S (partition: the model, or model and deployment), env S (sort: the instance),
//	fails N, last N and until N (Unix nanoseconds; until absent when no cool-down is open),
//	expires N (Unix nanoseconds), ttl N (expires, for DynamoDB to delete it later)
//
// A report's end is judged from expires on read (a filter), never from the item's disappearance.

const (
	attrHealthPK      = "target"
	attrHealthSK      = "env"
	attrHealthFails   = "fails"
	attrHealthLast    = "last"
	attrHealthUntil   = "until"
	attrHealthExpires = "expires"
)

// maxHealthPages bounds the pages one model's Query reads: reports are withdrawn at their
// instance's first success and expire within minutes, so more than a page (1 MB) is a table
// DynamoDB's TTL has not swept yet; the newest pages are not better than the first.
const maxHealthPages = 4

func healthKey(key, env string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrHealthPK: &types.AttributeValueMemberS{Value: key},
		attrHealthSK: &types.AttributeValueMemberS{Value: env},
	}
}

// PutHealth implements sharedhealth.Store: one PutItem.
func (s *Store) PutHealth(ctx context.Context, r sharedhealth.Report) error {
	item := healthKey(r.Key, r.Env)
	item[attrHealthFails] = &types.AttributeValueMemberN{Value: strconv.Itoa(r.Fails)}
	item[attrHealthLast] = nanos(r.Last)
	if !r.Until.IsZero() {
		item[attrHealthUntil] = nanos(r.Until)
	}
	item[attrHealthExpires] = nanos(r.Expires)
	item[TTLAttribute] = TTL(r.Expires)
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.tables.ProviderHealth), Item: item}); err != nil {
		return &OpError{Op: "PutItem", Table: s.tables.ProviderHealth, Err: err}
	}
	return nil
}

// DeleteHealth implements sharedhealth.Store: one DeleteItem.
func (s *Store) DeleteHealth(ctx context.Context, key, env string) error {
	if _, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.tables.ProviderHealth), Key: healthKey(key, env)}); err != nil {
		return &OpError{Op: "DeleteItem", Table: s.tables.ProviderHealth, Err: err}
	}
	return nil
}

// Health implements sharedhealth.Store: one Query per key, all at once, each keeping only the
// reports that have not expired at now.
func (s *Store) Health(ctx context.Context, keys []string, now time.Time) (map[string][]sharedhealth.Report, error) {
	got := make([][]sharedhealth.Report, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Go(func() { got[i], errs[i] = s.healthOf(ctx, key, now) })
	}
	wg.Wait()
	out := make(map[string][]sharedhealth.Report, len(keys))
	for i, key := range keys {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if len(got[i]) > 0 {
			out[key] = got[i]
		}
	}
	return out, nil
}

func (s *Store) healthOf(ctx context.Context, key string, now time.Time) ([]sharedhealth.Report, error) {
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(attrHealthPK).Equal(expression.Value(key))).
		WithFilter(expression.Name(attrHealthExpires).GreaterThan(expression.Value(now.UnixNano()))).
		Build()
	if err != nil {
		return nil, &OpError{Op: "Query", Table: s.tables.ProviderHealth, Err: err}
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.tables.ProviderHealth),
		KeyConditionExpression:    expr.KeyCondition(),
		FilterExpression:          expr.Filter(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}
	var out []sharedhealth.Report
	for range maxHealthPages {
		page, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, &OpError{Op: "Query", Table: s.tables.ProviderHealth, Err: err}
		}
		for _, it := range page.Items {
			out = append(out, decodeHealth(it))
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	return out, nil
}

func decodeHealth(it map[string]types.AttributeValue) sharedhealth.Report {
	r := sharedhealth.Report{Key: str(it[attrHealthPK]), Env: str(it[attrHealthSK]), Last: fromNanos(it[attrHealthLast]),
		Expires: fromNanos(it[attrHealthExpires])}
	if n, ok := it[attrHealthFails].(*types.AttributeValueMemberN); ok {
		r.Fails, _ = strconv.Atoi(n.Value)
	}
	if _, ok := it[attrHealthUntil]; ok {
		r.Until = fromNanos(it[attrHealthUntil])
	}
	return r
}
