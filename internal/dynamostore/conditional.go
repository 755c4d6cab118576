package dynamostore

import (
	"context"
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
