package dynamostore

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/idempotency"
)

// The Store implements idempotency.Store over the idempotency table. One item per (scope, key)
// holds either a pending claim or a finished record, like the embedded store's entry:
//
//	pk           S  scope and key (see idemPK)
//	state        S  "pending" or "done"
//	requestHash  S
//	token        S  the claimant's token (pending only)
//	expiresAt    N  Unix nanoseconds: the lease end (pending) or the record's expiry (done)
//	ttl          N  expiresAt in whole seconds, rounded up, for DynamoDB's TTL deletion
//	createdAt    N  Unix nanoseconds (done only)
//	status       N, contentType S, body B, bodyEncoding S ("gzip" or absent) (done only)
//
// Expiry is judged exactly, on read and in every condition, from expiresAt; ttl only lets
// DynamoDB delete the item eventually (moto never does), so a lingering expired item counts as
// absent and the next claim overwrites it.

const (
	attrIdemState    = "state"
	attrIdemHash     = "requestHash"
	attrIdemToken    = "token"
	attrIdemExpires  = "expiresAt"
	attrIdemCreated  = "createdAt"
	attrIdemStatus   = "status"
	attrIdemType     = "contentType"
	attrIdemBody     = "body"
	attrIdemEncoding = "bodyEncoding"

	idemPending = "pending"
	idemDone    = "done"

	encodingGzip = "gzip"
)

// MaxItemBytes is DynamoDB's item size limit (400 KB, attribute names included).
const MaxItemBytes = 400 * 1024

// compressAbove is the body size from which a record's body is stored gzipped: a stream's SSE
// frames shrink several times over, and below this the gzip header is not worth it.
const compressAbove = 1024

// claimAttempts bounds Claim's put-then-read loop. A repeat only happens when the item read back
// after a refused put had meanwhile been released or expired, so a few attempts always suffice.
const claimAttempts = 8

// RecordTooLargeError is Complete's answer for a record that does not fit in one item even with
// its body compressed. The claim has been released, so a retry of the request runs afresh rather
// than waiting out the lease; the response that was already sent is simply not replayable.
type RecordTooLargeError struct {
	Scope, Key string
	Size       int // the item's size in bytes with the body compressed
}

func (e *RecordTooLargeError) Error() string {
	return fmt.Sprintf("dynamostore: idempotency record for key %q is %d bytes compressed, over DynamoDB's %d-byte item limit; not recorded",
		e.Key, e.Size, MaxItemBytes)
}

// idemPK is the partition key of (scope, key). The scope's length comes first, so no choice of
// scope and key (any visible ASCII) can collide with another.
func idemPK(scope, key string) string {
	return strconv.Itoa(len(scope)) + ":" + scope + ":" + key
}

func nanos(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixNano(), 10)}
}

// Claim implements idempotency.Store. The pending entry is written on condition that no live
// item holds the key; when the write is refused, the item that refused it is read back and
// reported. DynamoDB evaluates the condition atomically, so of racing claimants exactly one wins.
func (s *Store) Claim(ctx context.Context, scope, key string, p idempotency.Pending) (idempotency.Claim, error) {
	pk := idemPK(scope, key)
	item := map[string]types.AttributeValue{
		attrIdempotencyPK: &types.AttributeValueMemberS{Value: pk},
		attrIdemState:     &types.AttributeValueMemberS{Value: idemPending},
		attrIdemHash:      &types.AttributeValueMemberS{Value: p.RequestHash},
		attrIdemToken:     &types.AttributeValueMemberS{Value: p.Token},
		attrIdemExpires:   nanos(p.LeaseUntil),
		TTLAttribute:      TTL(p.LeaseUntil),
	}
	// AbsentOrExpired judges at whole seconds (the ttl attribute); expiresAt makes it exact.
	cond, err := expression.NewBuilder().WithCondition(
		AbsentOrExpired(attrIdempotencyPK, p.Now).
			Or(expression.Name(attrIdemExpires).LessThanEqual(expression.Value(p.Now.UnixNano()))),
	).Build()
	if err != nil {
		return idempotency.Claim{}, fmt.Errorf("dynamostore: %w", err)
	}
	for range claimAttempts {
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           aws.String(s.tables.Idempotency),
			Item:                                item,
			ConditionExpression:                 cond.Condition(),
			ExpressionAttributeNames:            cond.Names(),
			ExpressionAttributeValues:           cond.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return idempotency.Claim{State: idempotency.Owned}, nil
		}
		var refused *types.ConditionalCheckFailedException
		if !errors.As(err, &refused) {
			return idempotency.Claim{}, &OpError{Op: "PutItem", Table: s.tables.Idempotency, Err: err}
		}
		holder := refused.Item
		if holder == nil { // not every DynamoDB implementation returns the item; read it
			if holder, err = s.getIdem(ctx, pk); err != nil {
				return idempotency.Claim{}, err
			}
		}
		if holder == nil || idemExpired(holder, p.Now) {
			continue // released or expired since the put was refused: claim again
		}
		if tok, _ := holder[attrIdemToken].(*types.AttributeValueMemberS); tok != nil && tok.Value == p.Token {
			// Our own claim: the put succeeded but its answer was lost, and the SDK's retry of it
			// was refused by the item the first try wrote.
			return idempotency.Claim{State: idempotency.Owned}, nil
		}
		return claimOf(holder)
	}
	return idempotency.Claim{}, fmt.Errorf("dynamostore: idempotency claim %q: %w", key, ErrConflict)
}

func (s *Store) getIdem(ctx context.Context, pk string) (map[string]types.AttributeValue, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.tables.Idempotency),
		Key:            map[string]types.AttributeValue{attrIdempotencyPK: &types.AttributeValueMemberS{Value: pk}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, &OpError{Op: "GetItem", Table: s.tables.Idempotency, Err: err}
	}
	return out.Item, nil
}

// idemExpired reports whether the entry's lease or record has run out at now. An entry whose
// expiry cannot be read counts as expired, as with Expired.
func idemExpired(item map[string]types.AttributeValue, now time.Time) bool {
	n, ok := item[attrIdemExpires].(*types.AttributeValueMemberN)
	if !ok {
		return true
	}
	exp, err := strconv.ParseInt(n.Value, 10, 64)
	return err != nil || exp <= now.UnixNano()
}

// claimOf reports a live entry held by someone else.
func claimOf(item map[string]types.AttributeValue) (idempotency.Claim, error) {
	state, _ := item[attrIdemState].(*types.AttributeValueMemberS)
	hash, _ := item[attrIdemHash].(*types.AttributeValueMemberS)
	if state == nil || hash == nil {
		return idempotency.Claim{}, errors.New("dynamostore: corrupt idempotency item: no state or request hash")
	}
	switch state.Value {
	case idemPending:
		return idempotency.Claim{State: idempotency.InProgress, RequestHash: hash.Value}, nil
	case idemDone:
		rec, err := decodeRecord(item)
		if err != nil {
			return idempotency.Claim{}, err
		}
		return idempotency.Claim{State: idempotency.Completed, RequestHash: hash.Value, Record: rec}, nil
	}
	return idempotency.Claim{}, fmt.Errorf("dynamostore: corrupt idempotency item: state %q", state.Value)
}

// ownedBy is the condition for changing the key's entry: it is still the pending claim of token.
func ownedBy(token string) expression.ConditionBuilder {
	return expression.Name(attrIdemState).Equal(expression.Value(idemPending)).
		And(expression.Name(attrIdemToken).Equal(expression.Value(token)))
}

// notOwner maps a write that ownedBy refused to idempotency.ErrNotOwner.
func notOwner(err error) error {
	if ConditionFailed(err) {
		return idempotency.ErrNotOwner
	}
	return err
}

// Complete implements idempotency.Store. The body is stored gzipped when that helps; a record that
// still exceeds DynamoDB's item limit is not stored, the claim is released, and the answer is a
// *RecordTooLargeError.
func (s *Store) Complete(ctx context.Context, scope, key, token string, rec idempotency.Record) error {
	pk := idemPK(scope, key)
	item, err := encodeRecord(pk, rec)
	if err != nil {
		return err
	}
	// The record keeps the claim's token, so a retry of this put (its first answer lost) that the
	// record itself refuses is known for what it is.
	item[attrIdemToken] = &types.AttributeValueMemberS{Value: token}
	if size := itemSize(item); size > MaxItemBytes {
		if err := s.giveUp(ctx, scope, key, token); err != nil {
			return err // ErrNotOwner included: someone else holds the key, which matters more
		}
		return &RecordTooLargeError{Scope: scope, Key: key, Size: size}
	}
	err = notOwner(s.putIf(ctx, s.tables.Idempotency, item, ownedBy(token)))
	if errors.Is(err, idempotency.ErrNotOwner) {
		held, gerr := s.getIdem(ctx, pk)
		if gerr != nil {
			return gerr
		}
		state, _ := held[attrIdemState].(*types.AttributeValueMemberS)
		tok, _ := held[attrIdemToken].(*types.AttributeValueMemberS)
		if state != nil && state.Value == idemDone && tok != nil && tok.Value == token {
			return nil
		}
	}
	return err
}

// giveUp releases the claimant's key. A not-owner answer for a key that is absent is a release
// whose first answer was lost — the SDK's retry found the key its first try had deleted — and the
// key is free, which is all a release is for: success. Held by another claimant, it is not.
func (s *Store) giveUp(ctx context.Context, scope, key, token string) error {
	err := s.Release(ctx, scope, key, token)
	if !errors.Is(err, idempotency.ErrNotOwner) {
		return err
	}
	held, gerr := s.getIdem(ctx, idemPK(scope, key))
	if gerr != nil {
		return gerr
	}
	if held == nil {
		return nil
	}
	return err
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, scope, key, token string) error {
	pk := map[string]types.AttributeValue{attrIdempotencyPK: &types.AttributeValueMemberS{Value: idemPK(scope, key)}}
	return notOwner(s.deleteIf(ctx, s.tables.Idempotency, pk, ownedBy(token)))
}

func encodeRecord(pk string, rec idempotency.Record) (map[string]types.AttributeValue, error) {
	item := map[string]types.AttributeValue{
		attrIdempotencyPK: &types.AttributeValueMemberS{Value: pk},
		attrIdemState:     &types.AttributeValueMemberS{Value: idemDone},
		attrIdemHash:      &types.AttributeValueMemberS{Value: rec.RequestHash},
		attrIdemExpires:   nanos(rec.ExpiresAt),
		TTLAttribute:      TTL(rec.ExpiresAt),
		attrIdemCreated:   nanos(rec.CreatedAt),
		attrIdemStatus:    &types.AttributeValueMemberN{Value: strconv.Itoa(rec.Status)},
	}
	if rec.ContentType != "" { // DynamoDB refuses an empty string only in keys, but keep items lean
		item[attrIdemType] = &types.AttributeValueMemberS{Value: rec.ContentType}
	}
	body := rec.Body
	if len(body) > compressAbove {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(body); err != nil {
			return nil, fmt.Errorf("dynamostore: compressing idempotency record: %w", err)
		}
		if err := zw.Close(); err != nil {
			return nil, fmt.Errorf("dynamostore: compressing idempotency record: %w", err)
		}
		if buf.Len() < len(body) {
			body = buf.Bytes()
			item[attrIdemEncoding] = &types.AttributeValueMemberS{Value: encodingGzip}
		}
	}
	if len(body) > 0 {
		item[attrIdemBody] = &types.AttributeValueMemberB{Value: body}
	}
	return item, nil
}

func decodeRecord(item map[string]types.AttributeValue) (*idempotency.Record, error) {
	rec := &idempotency.Record{}
	if v, ok := item[attrIdemHash].(*types.AttributeValueMemberS); ok {
		rec.RequestHash = v.Value
	}
	var nums [3]int64
	for i, name := range []string{attrIdemStatus, attrIdemCreated, attrIdemExpires} {
		v, ok := item[name].(*types.AttributeValueMemberN)
		if !ok {
			return nil, fmt.Errorf("dynamostore: corrupt idempotency record: no number %s", name)
		}
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("dynamostore: corrupt idempotency record: %s: %w", name, err)
		}
		nums[i] = n
	}
	rec.Status = int(nums[0])
	rec.CreatedAt = time.Unix(0, nums[1]).UTC()
	rec.ExpiresAt = time.Unix(0, nums[2]).UTC()
	if v, ok := item[attrIdemType].(*types.AttributeValueMemberS); ok {
		rec.ContentType = v.Value
	}
	if v, ok := item[attrIdemBody].(*types.AttributeValueMemberB); ok {
		rec.Body = v.Value
	}
	enc, _ := item[attrIdemEncoding].(*types.AttributeValueMemberS)
	switch {
	case enc == nil:
	case enc.Value == encodingGzip:
		zr, err := gzip.NewReader(bytes.NewReader(rec.Body))
		if err != nil {
			return nil, fmt.Errorf("dynamostore: corrupt idempotency record body: %w", err)
		}
		if rec.Body, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("dynamostore: corrupt idempotency record body: %w", err)
		}
	default:
		return nil, fmt.Errorf("dynamostore: idempotency record body encoded as %q, which this version cannot read", enc.Value)
	}
	return rec, nil
}

// itemSize is DynamoDB's measure of an item: attribute names plus values, a number counted at its
// largest (21 bytes). Only top-level scalars occur in idempotency items.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(v.Value)
		case *types.AttributeValueMemberB:
			n += len(v.Value)
		case *types.AttributeValueMemberN:
			n += 21
		default:
			n += MaxItemBytes // not produced here; never let it pass silently
		}
	}
	return n
}

var _ idempotency.Store = (*Store)(nil)
