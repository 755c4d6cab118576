package dynamostore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/limits"
)

// A request is counted in its windows by Admit (ledger.go), in ONE TransactWriteItems with no read
// before it: one Update per window, `ADD #c :one` under `attribute_not_exists(#c) OR #c < :limit`
// (windowUpdates). Either every window counts the request or none does, fleet-wide. Cost: a
// transactional write is two write units per item (≤ 1 KB), so the four windows cost 8 WCU; a
// refused one is cancelled, which DynamoDB also bills. The window start is in the item key and
// the TTL attribute is the window's end plus a day, so old windows need no reset and vanish.

// windowUpdates are the transaction items that count one request for keyID in every window of ws.
func (s *Store) windowUpdates(keyID string, ws []limits.Window) []types.TransactWriteItem {
	items := make([]types.TransactWriteItem, len(ws))
	for i, w := range ws {
		u := &types.Update{
			TableName:        aws.String(s.tables.Limits),
			Key:              map[string]types.AttributeValue{attrLimitPK: &types.AttributeValueMemberS{Value: w.ID(keyID)}},
			UpdateExpression: aws.String("ADD #c :one SET #ttl = :ttl"),
			ExpressionAttributeNames: map[string]string{
				"#c": attrLimitCount, "#ttl": TTLAttribute,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":one": &types.AttributeValueMemberN{Value: "1"},
				":ttl": TTL(w.End().Add(24 * time.Hour)),
			},
		}
		// A window with no limit is still counted (GET /usage shows it) but never refuses.
		if w.Limit != apikey.NoLimit {
			u.ConditionExpression = aws.String("attribute_not_exists(#c) OR #c < :limit")
			u.ExpressionAttributeValues[":limit"] = &types.AttributeValueMemberN{Value: strconv.Itoa(int(w.Limit))}
		}
		items[i] = types.TransactWriteItem{Update: u}
	}
	return items
}

// fullWindow finds the full window by reading the counts (-1: none is), for a cancellation that
// did not say which item failed; it is on the refusal path only.
func (s *Store) fullWindow(ctx context.Context, keyID string, ws []limits.Window) (int, error) {
	counts, err := s.RequestCounts(ctx, keyID, ws)
	if err != nil {
		return 0, err
	}
	for i, w := range ws {
		if w.Limit.Refuses(counts[i]) {
			return i, nil
		}
	}
	return -1, nil
}

// RequestCounts implements limits.Counter with one consistent BatchGetItem.
func (s *Store) RequestCounts(ctx context.Context, keyID string, ws []limits.Window) ([]int, error) {
	keys := make([]map[string]types.AttributeValue, len(ws))
	index := make(map[string]int, len(ws))
	for i, w := range ws {
		id := w.ID(keyID)
		keys[i] = map[string]types.AttributeValue{attrLimitPK: &types.AttributeValueMemberS{Value: id}}
		index[id] = i
	}
	counts := make([]int, len(ws))
	req := map[string]types.KeysAndAttributes{s.tables.Limits: {Keys: keys, ConsistentRead: aws.Bool(true)}}
	for attempt := 0; len(req) > 0; attempt++ {
		if attempt > 0 {
			if attempt >= updateAttempts {
				return nil, &OpError{Op: "BatchGetItem", Table: s.tables.Limits, Err: errors.New("unprocessed keys remain after retries")}
			}
			if err := backoff(ctx, attempt); err != nil {
				return nil, err
			}
		}
		out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return nil, &OpError{Op: "BatchGetItem", Table: s.tables.Limits, Err: err}
		}
		for _, item := range out.Responses[s.tables.Limits] {
			pk, _ := item[attrLimitPK].(*types.AttributeValueMemberS)
			n, _ := item[attrLimitCount].(*types.AttributeValueMemberN)
			if pk == nil || n == nil {
				continue
			}
			c, err := strconv.Atoi(n.Value)
			if err != nil {
				return nil, &OpError{Op: "BatchGetItem", Table: s.tables.Limits, Err: err}
			}
			counts[index[pk.Value]] = c
		}
		req = out.UnprocessedKeys
	}
	return counts, nil
}
