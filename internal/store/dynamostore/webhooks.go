package dynamostore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// Webhook endpoints are stored as JSON in one attribute beside their id and a record version:
// nothing queries their fields, and a new field needs no schema change.

func webhookKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrWebhookID: &types.AttributeValueMemberS{Value: id}}
}

func encodeEndpoint(e *webhook.Endpoint, version int64) (map[string]types.AttributeValue, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	return map[string]types.AttributeValue{
		attrWebhookID:      &types.AttributeValueMemberS{Value: e.ID},
		attrWebhookPayload: &types.AttributeValueMemberS{Value: string(raw)},
		attrRecordVersion:  &types.AttributeValueMemberN{Value: strconv.FormatInt(version, 10)},
	}, nil
}

func decodeEndpoint(item map[string]types.AttributeValue) (*webhook.Endpoint, int64, error) {
	raw, ok := item[attrWebhookPayload].(*types.AttributeValueMemberS)
	ver, ok2 := item[attrRecordVersion].(*types.AttributeValueMemberN)
	if !ok || !ok2 {
		return nil, 0, fmt.Errorf("dynamostore: webhook item without %s or %s", attrWebhookPayload, attrRecordVersion)
	}
	var e webhook.Endpoint
	if err := json.Unmarshal([]byte(raw.Value), &e); err != nil {
		return nil, 0, fmt.Errorf("dynamostore: corrupt webhook endpoint: %w", err)
	}
	v, err := strconv.ParseInt(ver.Value, 10, 64)
	return &e, v, err
}

// CreateEndpoint implements webhook.Store.
func (s *Store) CreateEndpoint(ctx context.Context, e *webhook.Endpoint) error {
	item, err := encodeEndpoint(e, 1)
	if err != nil {
		return err
	}
	err = s.putIf(ctx, s.tables.Webhooks, item, expression.AttributeNotExists(expression.Name(attrWebhookID)))
	if ConditionFailed(err) {
		return fmt.Errorf("dynamostore: webhook %s: %w", e.ID, ErrExists)
	}
	return err
}

// Endpoint implements webhook.Store.
func (s *Store) Endpoint(ctx context.Context, id string) (*webhook.Endpoint, error) {
	e, _, err := s.endpoint(ctx, id)
	return e, err
}

func (s *Store) endpoint(ctx context.Context, id string) (*webhook.Endpoint, int64, error) {
	if id == "" {
		return nil, 0, webhook.ErrNotFound
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.tables.Webhooks), Key: webhookKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, 0, &OpError{Op: "GetItem", Table: s.tables.Webhooks, Err: err}
	}
	if out.Item == nil {
		return nil, 0, webhook.ErrNotFound
	}
	return decodeEndpoint(out.Item)
}

// Endpoints implements webhook.Store with a scan: a gateway has a handful of endpoints, and the
// dispatcher reads them once per event.
func (s *Store) Endpoints(ctx context.Context) ([]webhook.Endpoint, error) {
	var out []webhook.Endpoint
	pages := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{TableName: aws.String(s.tables.Webhooks), ConsistentRead: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, &OpError{Op: "Scan", Table: s.tables.Webhooks, Err: err}
		}
		for _, item := range page.Items {
			e, _, err := decodeEndpoint(item)
			if err != nil {
				return nil, err
			}
			out = append(out, *e)
		}
	}
	slices.SortFunc(out, func(a, b webhook.Endpoint) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// UpdateEndpoint implements webhook.Store: read, apply, write if the version is unchanged, and
// start over after a lost race, so concurrent failure counts are all kept.
func (s *Store) UpdateEndpoint(ctx context.Context, id string, fn func(*webhook.Endpoint) error) (*webhook.Endpoint, error) {
	for attempt := range updateAttempts {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return nil, err
			}
		}
		e, version, err := s.endpoint(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := fn(e); err != nil {
			return nil, err
		}
		e.ID = id
		item, err := encodeEndpoint(e, version+1)
		if err != nil {
			return nil, err
		}
		err = s.putIf(ctx, s.tables.Webhooks, item, expression.Name(attrRecordVersion).Equal(expression.Value(version)))
		if ConditionFailed(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return e, nil
	}
	return nil, fmt.Errorf("dynamostore: UpdateEndpoint %s: %w", id, ErrConflict)
}

// DeleteEndpoint implements webhook.Store; the endpoint's attempts go with it.
func (s *Store) DeleteEndpoint(ctx context.Context, id string) error {
	err := s.deleteIf(ctx, s.tables.Webhooks, webhookKey(id), expression.AttributeExists(expression.Name(attrWebhookID)))
	if ConditionFailed(err) {
		return webhook.ErrNotFound
	}
	if err != nil {
		return err
	}
	pages := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:                 aws.String(s.tables.WebhookAttempts),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrAttemptsPK, "#sk": attrAttemptsSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: id}},
		ProjectionExpression:      aws.String("#pk, #sk"),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return &OpError{Op: "Query", Table: s.tables.WebhookAttempts, Err: err}
		}
		for _, key := range page.Items {
			if _, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.tables.WebhookAttempts), Key: key}); err != nil {
				return &OpError{Op: "DeleteItem", Table: s.tables.WebhookAttempts, Err: err}
			}
		}
	}
	return nil
}

// RecordAttempt implements webhook.Store; attempts expire after webhook.AttemptRetention.
func (s *Store) RecordAttempt(ctx context.Context, a webhook.Attempt) error {
	raw, err := json.Marshal(a)
	if err != nil {
		return err
	}
	sk := a.At.UTC().Format("20060102T150405.000000000Z") + "#" + a.DeliveryID + "#" + strconv.Itoa(a.Attempt)
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.tables.WebhookAttempts), Item: map[string]types.AttributeValue{
		attrAttemptsPK:     &types.AttributeValueMemberS{Value: a.EndpointID},
		attrAttemptsSK:     &types.AttributeValueMemberS{Value: sk},
		attrWebhookPayload: &types.AttributeValueMemberS{Value: string(raw)},
		TTLAttribute:       TTL(a.At.Add(webhook.AttemptRetention)),
	}})
	if err != nil {
		return &OpError{Op: "PutItem", Table: s.tables.WebhookAttempts, Err: err}
	}
	return nil
}

// Attempts implements webhook.Store.
func (s *Store) Attempts(ctx context.Context, endpointID string, limit int) ([]webhook.Attempt, error) {
	filter, err := expression.NewBuilder().WithFilter(NotExpired(time.Now())).
		WithKeyCondition(expression.Key(attrAttemptsPK).Equal(expression.Value(endpointID))).Build()
	if err != nil {
		return nil, fmt.Errorf("dynamostore: %w", err)
	}
	var out []webhook.Attempt
	pages := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:                 aws.String(s.tables.WebhookAttempts),
		KeyConditionExpression:    filter.KeyCondition(),
		FilterExpression:          filter.Filter(),
		ExpressionAttributeNames:  filter.Names(),
		ExpressionAttributeValues: filter.Values(),
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit)),
	})
	for pages.HasMorePages() && len(out) < limit {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, &OpError{Op: "Query", Table: s.tables.WebhookAttempts, Err: err}
		}
		for _, item := range page.Items {
			raw, ok := item[attrWebhookPayload].(*types.AttributeValueMemberS)
			if !ok {
				return nil, fmt.Errorf("dynamostore: webhook attempt without %s", attrWebhookPayload)
			}
			var a webhook.Attempt
			if err := json.Unmarshal([]byte(raw.Value), &a); err != nil {
				return nil, fmt.Errorf("dynamostore: corrupt webhook attempt: %w", err)
			}
			if len(out) < limit {
				out = append(out, a)
			}
		}
	}
	return out, nil
}
