package dynamostore

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxBatchGet is BatchGetItem's limit of keys per call.
const maxBatchGet = 100

// batchGet reads up to maxBatchGet items of table in one consistent BatchGetItem, calling again
// (after a backoff) only for keys DynamoDB leaves unprocessed. Items that do not exist are absent.
func (s *Store) batchGet(ctx context.Context, table string, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	if len(keys) > maxBatchGet {
		return nil, &OpError{Op: "BatchGetItem", Table: table, Err: errors.New("more than 100 keys in one batch")}
	}
	var items []map[string]types.AttributeValue
	req := map[string]types.KeysAndAttributes{table: {Keys: keys, ConsistentRead: aws.Bool(true)}}
	for attempt := 0; len(req) > 0; attempt++ {
		if attempt > 0 {
			if attempt >= updateAttempts {
				return nil, &OpError{Op: "BatchGetItem", Table: table, Err: errors.New("unprocessed keys remain after retries")}
			}
			if err := backoff(ctx, attempt); err != nil {
				return nil, err
			}
		}
		out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return nil, &OpError{Op: "BatchGetItem", Table: table, Err: err}
		}
		items = append(items, out.Responses[table]...)
		req = out.UnprocessedKeys
	}
	return items, nil
}
