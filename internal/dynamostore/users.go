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

// Charge implements billing.Store with one conditional UpdateItem (chargeUpdate). A failed
// condition is told apart from the record as the refusal found it, on that path only.
func (s *Store) Charge(ctx context.Context, id string, c billing.Charge) error {
	u, err := s.chargeUpdate(id, c)
	if err != nil {
		return err
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
		ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: u.ReturnValuesOnConditionCheckFailure,
	})
	if err == nil {
		return nil
	}
	var failed *types.ConditionalCheckFailedException
	if !errors.As(err, &failed) {
		return &OpError{Op: "UpdateItem", Table: s.tables.Users, Err: err}
	}
	return s.chargeRefused(ctx, id, c, failed.Item)
}

// chargeUpdate is charge c of user id as an update, for UpdateItem or a transaction: ADD the
// amounts (and one to the record version, so an admin edit never writes back a stale count)
// under the condition that the period is c's and, when capped, that the record has the settings
// c was decided on and each positive amount fits under its cap (`used <= cap - amount`, since a
// condition cannot add). A refusal returns the record as it found it.
func (s *Store) chargeUpdate(id string, c billing.Charge) (*types.Update, error) {
	period, err := attributevalue.Marshal(c.Period.UTC())
	if err != nil {
		return nil, fmt.Errorf("dynamostore: %w", err)
	}
	cond := "#ps = :period"
	names := map[string]string{"#ps": "periodStart", "#pu": "pointsUsed", "#sm": "spendMicros", "#v": attrKeyVersion}
	values := map[string]types.AttributeValue{
		":period": period,
		":p":      number(c.Points),
		":m":      number(c.Micros),
		":one":    number(1),
	}
	if c.Capped {
		cond += " AND #mp = :pcap"
		names["#mp"], values[":pcap"] = "monthlyPoints", number(c.PointsCap)
	}
	if c.Capped && c.Points > 0 {
		cond += " AND #pu <= :pmax"
		values[":pmax"] = number(c.PointsCap - c.Points)
	}
	if c.Capped && c.Micros > 0 {
		cond += " AND #ubm = :on AND #dl = :mcap AND #sm <= :mmax"
		names["#ubm"], names["#dl"] = "usageByModel", "dollarLimitMicros"
		values[":on"], values[":mcap"], values[":mmax"] = &types.AttributeValueMemberBOOL{Value: true}, number(c.MicrosCap), number(c.MicrosCap-c.Micros)
	}
	return &types.Update{
		TableName:                           aws.String(s.tables.Users),
		Key:                                 userKey(id),
		UpdateExpression:                    aws.String("ADD #pu :p, #sm :m, #v :one"),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, nil
}

// chargeRefused says why user id's record refused charge c, from item, the record as the refusal
// found it (nil: read it): ErrNotFound, ErrStalePeriod, or ErrInsufficient (which includes
// settings changed since the charge was decided: deciding again is the caller's part).
func (s *Store) chargeRefused(ctx context.Context, id string, c billing.Charge, item map[string]types.AttributeValue) error {
	var u billing.User
	if item == nil {
		cur, _, err := s.user(ctx, id)
		if err != nil {
			return err
		}
		u = *cur
	} else if err := attributevalue.UnmarshalMapWithOptions(item, &u, jsonTagsDecode); err != nil {
		return fmt.Errorf("dynamostore: corrupt user item %s: %w", id, err)
	}
	if !u.PeriodStart.Equal(c.Period) {
		return billing.ErrStalePeriod
	}
	return billing.ErrInsufficient
}

func number(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
