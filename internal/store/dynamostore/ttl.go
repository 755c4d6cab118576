package dynamostore

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TTLAttribute is the attribute that tables with expiring records (idempotency, …) name in their
// TTL setting: a number of seconds since the Unix epoch.
//
// DynamoDB deletes expired items only eventually (often days later), and moto never does, so a
// store must treat an item as gone once Expired says so, not once it disappears.
const TTLAttribute = "ttl"

// TTL is the attribute value for an item that expires at t.
func TTL(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(ttlSeconds(t), 10)}
}

// Expired reports whether item carries a TTL that has passed at now. Items without one never
// expire; an unreadable TTL counts as expired, because serving a record past its life is worse
// than recomputing it.
func Expired(item map[string]types.AttributeValue, now time.Time) bool {
	av, ok := item[TTLAttribute]
	if !ok {
		return false
	}
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return true
	}
	secs, err := strconv.ParseInt(n.Value, 10, 64)
	return err != nil || secs <= now.Unix()
}

// AbsentOrExpired is the condition for a create that may replace an expired record still lingering
// in the table: no item under partitionKey yet, or one whose TTL has passed at now.
func AbsentOrExpired(partitionKey string, now time.Time) expression.ConditionBuilder {
	return expression.AttributeNotExists(expression.Name(partitionKey)).
		Or(expression.Name(TTLAttribute).LessThanEqual(expression.Value(now.Unix())))
}

// NotExpired is a filter for Query and Scan that drops items whose TTL has passed at now.
func NotExpired(now time.Time) expression.ConditionBuilder {
	return expression.AttributeNotExists(expression.Name(TTLAttribute)).
		Or(expression.Name(TTLAttribute).GreaterThan(expression.Value(now.Unix())))
}

// ttlSeconds rounds up, so an item never expires before t.
func ttlSeconds(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}
