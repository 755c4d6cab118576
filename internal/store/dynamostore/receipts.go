package dynamostore

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/receipt"
)

// The Store implements receipt.Store over the receipts table, one item per receipt:
//
//	bundleId   S  partition key
//	keyId      S  the key that may read it
//	jws        S  the signed receipt
//	createdAt  N  Unix nanoseconds
//	expiresAt  N  Unix nanoseconds: the end of retention, judged exactly on read
//	ttl        N  expiresAt in seconds, for DynamoDB's eventual deletion

const (
	attrReceiptKey     = "keyId"
	attrReceiptJWS     = "jws"
	attrReceiptCreated = "createdAt"
	attrReceiptExpires = "expiresAt"
)

// PutReceipt implements receipt.Store.
func (s *Store) PutReceipt(ctx context.Context, r receipt.Record) error {
	item, err := receiptItem(r)
	if err != nil {
		return err
	}
	err = s.putIf(ctx, s.tables.Receipts, item, receiptAbsent())
	if ConditionFailed(err) {
		return receipt.ErrExists
	}
	return err
}

// receiptItem is r's item, signed: the write is durable before the invocation ends, and the
// Ed25519 operation is microseconds beside its round trip.
func receiptItem(r receipt.Record) (map[string]types.AttributeValue, error) {
	r, err := r.Signed()
	if err != nil {
		return nil, err
	}
	return map[string]types.AttributeValue{
		attrReceiptPK:      &types.AttributeValueMemberS{Value: r.BundleID},
		attrReceiptKey:     &types.AttributeValueMemberS{Value: r.KeyID},
		attrReceiptJWS:     &types.AttributeValueMemberS{Value: r.JWS},
		attrReceiptCreated: nanos(r.CreatedAt),
		attrReceiptExpires: nanos(r.ExpiresAt),
		TTLAttribute:       TTL(r.ExpiresAt),
	}, nil
}

// receiptAbsent is a receipt put's condition: the bundle id is free, or its receipt expired.
func receiptAbsent() expression.ConditionBuilder { return AbsentOrExpired(attrReceiptPK, time.Now()) }

// Receipt implements receipt.Store.
func (s *Store) Receipt(ctx context.Context, bundleID string) (receipt.Record, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.tables.Receipts),
		Key:            map[string]types.AttributeValue{attrReceiptPK: &types.AttributeValueMemberS{Value: bundleID}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return receipt.Record{}, &OpError{Op: "GetItem", Table: s.tables.Receipts, Err: err}
	}
	if out.Item == nil {
		return receipt.Record{}, receipt.ErrNotFound
	}
	r := receipt.Record{
		BundleID:  bundleID,
		KeyID:     str(out.Item[attrReceiptKey]),
		JWS:       str(out.Item[attrReceiptJWS]),
		CreatedAt: fromNanos(out.Item[attrReceiptCreated]),
		ExpiresAt: fromNanos(out.Item[attrReceiptExpires]),
	}
	if !time.Now().Before(r.ExpiresAt) {
		return receipt.Record{}, receipt.ErrNotFound
	}
	return r, nil
}

// fromNanos reads a nanos attribute; a missing or unreadable one is the zero time, which every
// reader treats as already expired rather than kept forever.
func fromNanos(av types.AttributeValue) time.Time {
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return time.Time{}
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, v).UTC()
}

func str(av types.AttributeValue) string {
	s, _ := av.(*types.AttributeValueMemberS)
	if s == nil {
		return ""
	}
	return s.Value
}
