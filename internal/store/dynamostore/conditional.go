package dynamostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// putIf writes item into table if cond holds. A refused condition comes back inside an *OpError
// like any other DynamoDB error; callers tell it apart with ConditionFailed and map it to their
// domain error.
func (s *Store) putIf(ctx context.Context, table string, item map[string]types.AttributeValue, cond expression.ConditionBuilder) error {
	return conditionally("PutItem", table, cond, func(e expression.Expression) error {
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 aws.String(table),
			Item:                      item,
			ConditionExpression:       e.Condition(),
			ExpressionAttributeNames:  e.Names(),
			ExpressionAttributeValues: e.Values(),
		})
		return err
	})
}

// deleteIf deletes the item at key from table if cond holds; its errors are putIf's.
func (s *Store) deleteIf(ctx context.Context, table string, key map[string]types.AttributeValue, cond expression.ConditionBuilder) error {
	return conditionally("DeleteItem", table, cond, func(e expression.Expression) error {
		_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                 aws.String(table),
			Key:                       key,
			ConditionExpression:       e.Condition(),
			ExpressionAttributeNames:  e.Names(),
			ExpressionAttributeValues: e.Values(),
		})
		return err
	})
}

// conditionally builds cond and runs the write op with it, so every conditional write reports
// a failure the same way: a bad expression as itself, DynamoDB's answer as an *OpError.
func conditionally(op, table string, cond expression.ConditionBuilder, write func(expression.Expression) error) error {
	e, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("dynamostore: %w", err)
	}
	if err := write(e); err != nil {
		return &OpError{Op: op, Table: table, Err: err}
	}
	return nil
}

// conditionalPut is a transaction's put of item into table if cond holds.
func conditionalPut(table string, item map[string]types.AttributeValue, cond expression.ConditionBuilder) (*types.Put, error) {
	e, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("dynamostore: %w", err)
	}
	return &types.Put{TableName: aws.String(table), Item: item, ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()}, nil
}

// transact runs items as ONE TransactWriteItems: all of them or none. A cancellation by a failed
// condition returns canceled with DynamoDB's per-item reasons, in items' order (which item
// refused, and with ReturnValuesOnConditionCheckFailure the item as it was); table names the
// write in errors. A transaction cancelled only by a conflict with a concurrent one on the same
// items is retried. The ClientRequestToken makes the SDK's own retry of one call idempotent, so
// a lost response never applies the writes twice; each retry here gets a new one, because the
// cancelled call is finished and re-sending its token would replay its answer.
func (s *Store) transact(ctx context.Context, table string, items []types.TransactWriteItem) (reasons []types.CancellationReason, canceled bool, err error) {
	in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
	for attempt := range updateAttempts {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return nil, false, err
			}
		}
		var token [16]byte
		_, _ = rand.Read(token[:])
		in.ClientRequestToken = aws.String(hex.EncodeToString(token[:]))
		_, err := s.db.TransactWriteItems(ctx, in)
		if err == nil {
			return nil, false, nil
		}
		var tc *types.TransactionCanceledException
		if !errors.As(err, &tc) {
			return nil, false, &OpError{Op: "TransactWriteItems", Table: table, Err: err}
		}
		if failed, conflict := cancellation(tc.CancellationReasons); failed >= 0 || !conflict {
			return tc.CancellationReasons, true, nil
		}
	}
	return nil, false, &OpError{Op: "TransactWriteItems", Table: table, Err: ErrConflict}
}

// cancellation reads a cancelled transaction's per-item reasons: the first item whose condition
// failed, or whether it was only a conflict worth retrying.
func cancellation(reasons []types.CancellationReason) (failed int, conflict bool) {
	for i, r := range reasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed":
			return i, false
		case "TransactionConflict":
			conflict = true
		}
	}
	return -1, conflict
}

// conditionFailed reports whether reasons say item i's condition failed.
func conditionFailed(reasons []types.CancellationReason, i int) bool {
	return i < len(reasons) && aws.ToString(reasons[i].Code) == "ConditionalCheckFailed"
}
