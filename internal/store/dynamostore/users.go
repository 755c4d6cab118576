package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

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
	u, err := decodeUser(out.Item)
	if err != nil {
		return nil, 0, fmt.Errorf("dynamostore: corrupt user item %s: %w", id, err)
	}
	var version int64
	if av, ok := out.Item[attrKeyVersion]; ok {
		if err := attributevalue.Unmarshal(av, &version); err != nil {
			return nil, 0, fmt.Errorf("dynamostore: corrupt user item %s: version: %w", id, err)
		}
	}
	return u, version, nil
}

// ListUsers implements billing.Lister with a consistent Scan of the users table, ordered by id.
func (s *Store) ListUsers(ctx context.Context) ([]*billing.User, error) {
	users := []*billing.User{}
	pages := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{TableName: aws.String(s.tables.Users), ConsistentRead: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, &OpError{Op: "Scan", Table: s.tables.Users, Err: err}
		}
		for _, item := range page.Items {
			u, err := decodeUser(item)
			if err != nil {
				return nil, fmt.Errorf("dynamostore: corrupt user item: %w", err)
			}
			users = append(users, u)
		}
	}
	slices.SortFunc(users, func(a, b *billing.User) int { return strings.Compare(a.ID, b.ID) })
	return users, nil
}

// decodeUser reads a user item; no holds read as nil, as a record without any is written.
func decodeUser(item map[string]types.AttributeValue) (*billing.User, error) {
	var u billing.User
	if err := attributevalue.UnmarshalMapWithOptions(item, &u, jsonTagsDecode); err != nil {
		return nil, err
	}
	if len(u.Holds) == 0 {
		u.Holds = nil
	}
	return &u, nil
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
	if _, ok := item[attrHolds]; !ok {
		// Always a map, even empty: a reservation adds its hold as one entry of it (SET
		// holds.<id>), which DynamoDB refuses when the map itself is missing.
		item[attrHolds] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
	}
	return item, nil
}

// attrHolds is the user item's map of reservation holds (billing.User.Holds).
const attrHolds = "holds"

// errNoHolds is a reservation refused because its user's item has no holds map yet (an item
// written before holds existed): ensureHolds adds it and the reservation is tried again.
var errNoHolds = errors.New("dynamostore: the user item has no holds map")

// ensureHolds gives user id's item an empty holds map if it has none.
func (s *Store) ensureHolds(ctx context.Context, id string) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.Users), Key: userKey(id),
		UpdateExpression:          aws.String("SET #h = if_not_exists(#h, :empty)"),
		ConditionExpression:       aws.String("attribute_exists(#id)"),
		ExpressionAttributeNames:  map[string]string{"#h": attrHolds, "#id": attrUserID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":empty": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}},
	})
	if ConditionFailed(err) {
		return billing.ErrNotFound
	}
	if err != nil {
		return &OpError{Op: "UpdateItem", Table: s.tables.Users, Err: err}
	}
	return nil
}

// withHolds runs a write that may open a hold, once more after giving the user's item its holds
// map if it lacked one.
func (s *Store) withHolds(ctx context.Context, id string, write func() error) error {
	err := write()
	if !errors.Is(err, errNoHolds) {
		return err
	}
	if err := s.ensureHolds(ctx, id); err != nil {
		return err
	}
	return write()
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
	return s.withHolds(ctx, id, func() error { return s.charge(ctx, id, c) })
}

func (s *Store) charge(ctx context.Context, id string, c billing.Charge) error {
	u, err := s.chargeUpdate(id, c)
	if err != nil {
		return err
	}
	_, err = s.db.UpdateItem(ctx, updateItem(u))
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
	if c.Capped && c.Points > 0 && c.PointsCap != billing.NoQuota { // no quota: any points, while it has none
		cond += " AND #pu <= :pmax"
		values[":pmax"] = number(c.PointsCap - c.Points)
	}
	if c.Capped && c.Micros > 0 {
		cond += " AND #ubm = :on AND #dl = :mcap AND #sm <= :mmax"
		names["#ubm"], names["#dl"] = "usageByModel", "dollarLimitMicros"
		values[":on"], values[":mcap"], values[":mmax"] = &types.AttributeValueMemberBOOL{Value: true}, number(c.MicrosCap), number(c.MicrosCap-c.Micros)
	}
	update := "ADD #pu :p, #sm :m, #v :one"
	var sets []string
	if c.Opens != "" {
		hold, err := attributevalue.MarshalWithOptions(c.Hold, jsonTags)
		if err != nil {
			return nil, fmt.Errorf("dynamostore: %w", err)
		}
		names["#holds"], names["#ho"], values[":hold"] = attrHolds, c.Opens, hold
		cond += " AND attribute_exists(#holds)"
		sets = append(sets, "#holds.#ho = :hold")
	}
	if cl := c.Claim; cl != nil {
		// The threshold is announced by the write that reaches it, once: the mark must still be
		// the one the claim read, and the count with this charge must reach the level.
		names["#al"], values[":mark"] = "pointsAlerted", &types.AttributeValueMemberS{Value: cl.Mark}
		count, amount := "#pu", c.Points
		if cl.Dollars {
			names["#al"], count, amount = "budgetAlerted", "#sm", c.Micros
		}
		if cl.Was == "" {
			cond += " AND attribute_not_exists(#al)"
		} else {
			cond += " AND #al = :was"
			values[":was"] = &types.AttributeValueMemberS{Value: cl.Was}
		}
		cond += " AND " + count + " >= :lvl"
		values[":lvl"] = number(cl.Level - amount)
		sets = append(sets, "#al = :mark")
	}
	if len(sets) > 0 {
		update += " SET " + strings.Join(sets, ", ")
	}
	if c.Closes != "" {
		// The settlement and a refund both remove the hold under this condition: one of them.
		names["#holds"], names["#hc"] = attrHolds, c.Closes
		cond += " AND attribute_exists(#holds.#hc)"
		update += " REMOVE #holds.#hc"
	}
	return &types.Update{
		TableName:                           aws.String(s.tables.Users),
		Key:                                 userKey(id),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, nil
}

// updateItem is a transaction's update as an UpdateItem of its own.
func updateItem(u *types.Update) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
		ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: u.ReturnValuesOnConditionCheckFailure,
	}
}

// chargeRefused says why user id's record refused charge c, from item, the record as the refusal
// found it (nil: read it): ErrNotFound, ErrStalePeriod, or ErrInsufficient (which includes
// settings changed since the charge was decided: deciding again is the caller's part).
func (s *Store) chargeRefused(ctx context.Context, id string, c billing.Charge, item map[string]types.AttributeValue) error {
	if item == nil {
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.tables.Users), Key: userKey(id), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return &OpError{Op: "GetItem", Table: s.tables.Users, Err: err}
		}
		if out.Item == nil {
			return billing.ErrNotFound
		}
		item = out.Item
	}
	u, err := decodeUser(item)
	if err != nil {
		return fmt.Errorf("dynamostore: corrupt user item %s: %w", id, err)
	}
	if !u.PeriodStart.Equal(c.Period) {
		return billing.ErrStalePeriod
	}
	if _, ok := u.Holds[c.Closes]; c.Closes != "" && !ok {
		return billing.ErrHoldGone
	}
	if _, ok := item[attrHolds]; c.Opens != "" && !ok {
		return errNoHolds
	}
	if c.Claim != nil && c.Fits(u) && !c.Claim.Holds(u, c) {
		return billing.ErrClaimLost
	}
	return billing.ErrInsufficient
}

func number(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// RefundExpired implements ledger.Store: a Scan of the users holding reservations, and for each
// hold expired before now one conditional UpdateItem that gives its amounts back and removes it
// — only while it is there and its period is the record's, so a settlement (which removes it
// under the same condition) and a refund never both happen. A hold of a period the record has
// left is only removed. Run it from a schedule, never on a request's path.
func (s *Store) RefundExpired(ctx context.Context, now time.Time) (int, error) {
	n := 0
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(s.tables.Users),
		ConsistentRead:            aws.Bool(true),
		ProjectionExpression:      aws.String("#id, #holds, #ps"),
		FilterExpression:          aws.String("size(#holds) > :zero"),
		ExpressionAttributeNames:  map[string]string{"#id": attrUserID, "#holds": attrHolds, "#ps": "periodStart"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":zero": number(0)},
	}
	for {
		out, err := s.db.Scan(ctx, in)
		if err != nil {
			return n, &OpError{Op: "Scan", Table: s.tables.Users, Err: err}
		}
		for _, item := range out.Items {
			u, err := decodeUser(item)
			if err != nil {
				return n, fmt.Errorf("dynamostore: corrupt user item: %w", err)
			}
			for id, h := range u.Holds {
				if !h.Expires.Before(now) {
					continue
				}
				removed, err := s.refundHold(ctx, u.ID, id, h)
				if err != nil {
					return n, err
				}
				if removed {
					n++
				}
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return n, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// refundHold gives back hold id of user userID and removes it, if it is still there; it reports
// whether it removed it.
func (s *Store) refundHold(ctx context.Context, userID, id string, h billing.Hold) (bool, error) {
	// The hold's own charge taken back, closing it: the settlement's update with the amounts
	// negated, so the two remove the hold under one condition.
	u, err := s.chargeUpdate(userID, billing.Charge{Period: h.Period, Points: -h.Points, Micros: -h.Micros, Closes: id})
	if err != nil {
		return false, err
	}
	refund := updateItem(u)
	refund.ReturnValuesOnConditionCheckFailure = "" // a refused refund needs no explaining
	names := map[string]string{"#holds": attrHolds, "#h": id, "#v": attrKeyVersion}
	drop := &dynamodb.UpdateItemInput{ // its period is over: nothing to give back, only the hold to remove
		TableName: aws.String(s.tables.Users), Key: userKey(userID),
		UpdateExpression:          aws.String("ADD #v :one REMOVE #holds.#h"),
		ConditionExpression:       aws.String("attribute_exists(#holds.#h)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": number(1)},
	}
	for _, in := range []*dynamodb.UpdateItemInput{refund, drop} {
		_, err := s.db.UpdateItem(ctx, in)
		if err == nil {
			return true, nil
		}
		if !ConditionFailed(err) {
			return false, &OpError{Op: "UpdateItem", Table: s.tables.Users, Err: err}
		}
	}
	return false, nil // settled (or refunded) meanwhile
}
