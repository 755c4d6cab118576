package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/billing"
)

// A user item holds billing.User's fields under their JSON names plus recordVersion. Charges are
// one conditional UpdateItem (ADD, no read before); admin edits and period renewals are a
// read-modify-write conditional on recordVersion, which every charge also bumps, so an edit never
// writes back a stale count.

// User implements billing.Store with a consistent read.
func (s *Store) User(ctx context.Context, id string) (*billing.User, error) {
	u, _, err := s.user(ctx, id)
	return u, err
}

func (s *Store) user(ctx context.Context, id string) (*billing.User, int64, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.tables.Users),
		Key:            userKey(id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, 0, &OpError{Op: "GetItem", Table: s.tables.Users, Err: err}
	}
	if out.Item == nil {
		return nil, 0, billing.ErrNotFound
	}
	var u billing.User
	if err := attributevalue.UnmarshalMapWithOptions(out.Item, &u, jsonTagsDecode); err != nil {
		return nil, 0, fmt.Errorf("dynamostore: corrupt user item %s: %w", id, err)
	}
	var version int64
	if av, ok := out.Item[attrKeyVersion]; ok {
		if err := attributevalue.Unmarshal(av, &version); err != nil {
			return nil, 0, fmt.Errorf("dynamostore: corrupt user item %s: version: %w", id, err)
		}
	}
	return &u, version, nil
}

func userKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrUserID: &types.AttributeValueMemberS{Value: id}}
}

func encodeUser(u *billing.User, version int64) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMapWithOptions(u, jsonTags)
	if err != nil {
		return nil, fmt.Errorf("dynamostore: encoding user %s: %w", u.ID, err)
	}
	item[attrKeyVersion] = &types.AttributeValueMemberN{Value: strconv.FormatInt(version, 10)}
	return item, nil
}

// CreateUser implements billing.Store.
func (s *Store) CreateUser(ctx context.Context, u *billing.User) error {
	item, err := encodeUser(u, 0)
	if err != nil {
		return err
	}
	err = s.putIf(ctx, s.tables.Users, item, expression.AttributeNotExists(expression.Name(attrUserID)))
	if ConditionFailed(err) {
		return billing.ErrExists
	}
	return err
}

// UpdateUser implements billing.Store; update may run more than once (after a lost race).
func (s *Store) UpdateUser(ctx context.Context, id string, update func(*billing.User) error) (*billing.User, error) {
	for attempt := range updateAttempts {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return nil, err
			}
		}
		u, version, err := s.user(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := update(u); err != nil {
			return nil, err
		}
		if u.ID != id {
			return nil, fmt.Errorf("dynamostore: UpdateUser %s: the user's ID cannot change", id)
		}
		item, err := encodeUser(u, version+1)
		if err != nil {
			return nil, err
		}
		err = s.putIf(ctx, s.tables.Users, item, expression.Name(attrKeyVersion).Equal(expression.Value(version)))
		if ConditionFailed(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return u, nil
	}
	return nil, fmt.Errorf("dynamostore: UpdateUser %s: %w", id, ErrConflict)
}

// Charge implements billing.Store with one conditional UpdateItem: the period must match and,
// when capped, each positive amount must fit under its cap (`used <= cap - amount`, since a
// condition cannot add). A failed condition is told apart by reading the item, on that path only.
func (s *Store) Charge(ctx context.Context, id string, c billing.Charge) error {
	period, err := attributevalue.Marshal(c.Period.UTC())
	if err != nil {
		return fmt.Errorf("dynamostore: %w", err)
	}
	cond := "#ps = :period"
	values := map[string]types.AttributeValue{
		":period": period,
		":p":      &types.AttributeValueMemberN{Value: strconv.FormatInt(c.Points, 10)},
		":m":      &types.AttributeValueMemberN{Value: strconv.FormatInt(c.Micros, 10)},
		":one":    &types.AttributeValueMemberN{Value: "1"},
	}
	if c.Capped && c.Points > 0 {
		cond += " AND #pu <= :pmax"
		values[":pmax"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(c.PointsCap-c.Points, 10)}
	}
	if c.Capped && c.Micros > 0 {
		cond += " AND #sm <= :mmax"
		values[":mmax"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(c.MicrosCap-c.Micros, 10)}
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.tables.Users),
		Key:                 userKey(id),
		UpdateExpression:    aws.String("ADD #pu :p, #sm :m, #v :one"),
		ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: map[string]string{
			"#ps": "periodStart", "#pu": "pointsUsed", "#sm": "spendMicros", "#v": attrKeyVersion,
		},
		ExpressionAttributeValues: values,
	})
	if err == nil {
		return nil
	}
	var failed *types.ConditionalCheckFailedException
	if !errors.As(err, &failed) {
		return &OpError{Op: "UpdateItem", Table: s.tables.Users, Err: err}
	}
	u, _, err := s.user(ctx, id)
	switch {
	case err != nil:
		return err
	case !u.PeriodStart.Equal(c.Period):
		return billing.ErrStalePeriod
	default:
		return billing.ErrInsufficient
	}
}
