package dynamostore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/breaker"
)

// The Store implements breaker.Store over the circuit breakers table, two kinds of item:
//
//	pk "breaker#<kind>:<id>": subjectType S, subjectId S, reason S, openedBy S,
//	    openedAt N (Unix nanoseconds), until N (absent: until closed), ttl N (with until)
//	pk "violations#<kind>:<id>#<window Unix seconds>": count N, ttl N (the window's end)
//
// A cooldown's end is judged on read from until; ttl only lets DynamoDB delete the item later.

const (
	breakerPrefix      = "breaker#"
	violationPrefix    = "violations#"
	attrBreakerType    = "subjectType"
	attrBreakerID      = "subjectId"
	attrBreakerReason  = "reason"
	attrBreakerBy      = "openedBy"
	attrBreakerOpened  = "openedAt"
	attrBreakerUntil   = "until"
	attrViolationCount = "count"
)

func breakerKey(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrBreakerPK: &types.AttributeValueMemberS{Value: pk}}
}

// Breaker implements breaker.Store.
func (s *Store) Breaker(ctx context.Context, subject breaker.Subject) (breaker.State, bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.CircuitBreakers), Key: breakerKey(breakerPrefix + subject.String()), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return breaker.State{}, false, &OpError{Op: "GetItem", Table: s.tables.CircuitBreakers, Err: err}
	}
	if out.Item == nil {
		return breaker.State{}, false, nil
	}
	return decodeBreaker(out.Item), true, nil
}

// Breakers implements breaker.BatchReader: a key's and its user's breakers in one round trip.
func (s *Store) Breakers(ctx context.Context, subjects []breaker.Subject) (map[breaker.Subject]breaker.State, error) {
	keys := make([]map[string]types.AttributeValue, len(subjects))
	for i, sub := range subjects {
		keys[i] = breakerKey(breakerPrefix + sub.String())
	}
	items, err := s.batchGet(ctx, s.tables.CircuitBreakers, keys)
	if err != nil {
		return nil, err
	}
	out := make(map[breaker.Subject]breaker.State, len(items))
	for _, item := range items {
		st := decodeBreaker(item)
		out[st.Subject] = st
	}
	return out, nil
}

// PutBreaker implements breaker.Store.
func (s *Store) PutBreaker(ctx context.Context, st breaker.State) error {
	item := map[string]types.AttributeValue{
		attrBreakerPK:     &types.AttributeValueMemberS{Value: breakerPrefix + st.Subject.String()},
		attrBreakerType:   &types.AttributeValueMemberS{Value: st.Subject.Kind},
		attrBreakerID:     &types.AttributeValueMemberS{Value: st.Subject.ID},
		attrBreakerReason: &types.AttributeValueMemberS{Value: st.Reason},
		attrBreakerBy:     &types.AttributeValueMemberS{Value: st.OpenedBy},
		attrBreakerOpened: nanos(st.OpenedAt),
	}
	if !st.Until.IsZero() {
		item[attrBreakerUntil] = nanos(st.Until)
		item[TTLAttribute] = TTL(st.Until)
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.tables.CircuitBreakers), Item: item}); err != nil {
		return &OpError{Op: "PutItem", Table: s.tables.CircuitBreakers, Err: err}
	}
	return nil
}

// DeleteBreaker implements breaker.Store.
func (s *Store) DeleteBreaker(ctx context.Context, subject breaker.Subject, openedAt time.Time) (bool, error) {
	cond := expression.AttributeExists(expression.Name(attrBreakerPK))
	if !openedAt.IsZero() {
		cond = cond.And(expression.Name(attrBreakerOpened).Equal(expression.Value(nanos(openedAt))))
	}
	err := s.deleteIf(ctx, s.tables.CircuitBreakers, breakerKey(breakerPrefix+subject.String()), cond)
	if ConditionFailed(err) {
		return false, nil
	}
	return err == nil, err
}

// ListBreakers implements breaker.Store. Breakers are few (a handful of contained subjects), so
// a filtered scan is the simplest correct listing.
func (s *Store) ListBreakers(ctx context.Context) ([]breaker.State, error) {
	filter, err := expression.NewBuilder().WithFilter(expression.BeginsWith(expression.Name(attrBreakerPK), breakerPrefix)).Build()
	if err != nil {
		return nil, err
	}
	out := []breaker.State{}
	p := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{
		TableName: aws.String(s.tables.CircuitBreakers), ConsistentRead: aws.Bool(true), FilterExpression: filter.Filter(),
		ExpressionAttributeNames: filter.Names(), ExpressionAttributeValues: filter.Values(),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, &OpError{Op: "Scan", Table: s.tables.CircuitBreakers, Err: err}
		}
		for _, item := range page.Items {
			out = append(out, decodeBreaker(item))
		}
	}
	return out, nil
}

// AddViolation implements breaker.Store with one atomic ADD.
func (s *Store) AddViolation(ctx context.Context, subject breaker.Subject, window, expires time.Time) (int, error) {
	pk := violationPrefix + subject.String() + "#" + strconv.FormatInt(window.Unix(), 10)
	upd, err := expression.NewBuilder().WithUpdate(expression.Add(expression.Name(attrViolationCount), expression.Value(1)).
		Set(expression.Name(TTLAttribute), expression.Value(TTL(expires)))).Build()
	if err != nil {
		return 0, err
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.CircuitBreakers), Key: breakerKey(pk), UpdateExpression: upd.Update(),
		ExpressionAttributeNames: upd.Names(), ExpressionAttributeValues: upd.Values(), ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, &OpError{Op: "UpdateItem", Table: s.tables.CircuitBreakers, Err: err}
	}
	n, _ := out.Attributes[attrViolationCount].(*types.AttributeValueMemberN)
	if n == nil {
		return 0, &OpError{Op: "UpdateItem", Table: s.tables.CircuitBreakers, Err: errors.New("the update returned no count")}
	}
	return strconv.Atoi(n.Value)
}

func decodeBreaker(item map[string]types.AttributeValue) breaker.State {
	st := breaker.State{
		Subject:  breaker.Subject{Kind: str(item[attrBreakerType]), ID: str(item[attrBreakerID])},
		Reason:   str(item[attrBreakerReason]),
		OpenedBy: str(item[attrBreakerBy]),
		OpenedAt: fromNanos(item[attrBreakerOpened]),
	}
	if _, ok := item[attrBreakerUntil]; ok {
		st.Until = fromNanos(item[attrBreakerUntil])
		if st.Until.IsZero() { // unreadable: closed, rather than open for ever
			st.Until = time.Unix(0, 1)
		}
	}
	return st
}
