package dynamostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/apikey"
)

// updateAttempts bounds UpdateKey's optimistic retries. Each lost attempt means another writer
// won, so this many attempts always suffice for that many concurrent admin edits of one key.
const updateAttempts = 8

// CreateKey stores a new key. Its ID and Hash must be set; a key with the same hash is refused
// with ErrExists, without overwriting it.
func (s *Store) CreateKey(ctx context.Context, k *apikey.Key) error {
	if k.Hash == "" || k.ID == "" {
		return errors.New("dynamostore: CreateKey needs the key's ID and Hash")
	}
	item, err := encodeKey(k, 1)
	if err != nil {
		return err
	}
	err = s.putIf(ctx, s.tables.APIKeys, item, expression.AttributeNotExists(expression.Name(attrKeyHash)))
	if ConditionFailed(err) {
		return fmt.Errorf("dynamostore: key %s: %w (%w)", k.ID, apikey.ErrExists, ErrExists)
	}
	return err
}

// KeyByHash implements identity.KeyFinder. It reads consistently, so a key works the moment
// CreateKey returns and a revocation is seen at once (the cost is small behind keycache).
func (s *Store) KeyByHash(ctx context.Context, hash string) (*apikey.Key, error) {
	k, _, err := s.keyByHash(ctx, hash)
	return k, err
}

func (s *Store) keyByHash(ctx context.Context, hash string) (*apikey.Key, int64, error) {
	if hash == "" {
		// DynamoDB refuses an empty key attribute with a validation error; an empty hash simply
		// names no key.
		return nil, 0, apikey.ErrNotFound
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.tables.APIKeys),
		Key:            map[string]types.AttributeValue{attrKeyHash: &types.AttributeValueMemberS{Value: hash}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, 0, &OpError{Op: "GetItem", Table: s.tables.APIKeys, Err: err}
	}
	if out.Item == nil {
		return nil, 0, apikey.ErrNotFound
	}
	return decodeKey(out.Item)
}

// KeyByID finds a key by its public id. The byId index maps id → hash and is eventually
// consistent (a key created a moment ago may briefly be missing); the record itself is then read
// consistently, so what is returned is never stale.
func (s *Store) KeyByID(ctx context.Context, id string) (*apikey.Key, error) {
	hash, err := s.hashByID(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.KeyByHash(ctx, hash)
}

func (s *Store) hashByID(ctx context.Context, id string) (string, error) {
	if id == "" {
		return "", apikey.ErrNotFound
	}
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(attrKeyID).Equal(expression.Value(id))).Build()
	if err != nil {
		return "", fmt.Errorf("dynamostore: %w", err)
	}
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.tables.APIKeys),
		IndexName:                 aws.String(indexKeysByID),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		Limit:                     aws.Int32(1),
	})
	if err != nil {
		return "", &OpError{Op: "Query " + indexKeysByID, Table: s.tables.APIKeys, Err: err}
	}
	if len(out.Items) == 0 {
		return "", apikey.ErrNotFound
	}
	hash, ok := out.Items[0][attrKeyHash].(*types.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("dynamostore: index %s entry for key %s has no hash", indexKeysByID, id)
	}
	return hash.Value, nil
}

// ListKeys returns every key, oldest first (ties by id), like the embedded store. It scans the
// table, which suits an admin listing of a gateway's keys, not a per-request path.
func (s *Store) ListKeys(ctx context.Context) ([]*apikey.Key, error) {
	keys := []*apikey.Key{}
	pages := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{
		TableName:      aws.String(s.tables.APIKeys),
		ConsistentRead: aws.Bool(true),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, &OpError{Op: "Scan", Table: s.tables.APIKeys, Err: err}
		}
		for _, item := range page.Items {
			k, _, err := decodeKey(item)
			if err != nil {
				return nil, err
			}
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b *apikey.Key) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return keys, nil
}

// UpdateKey applies update to the key with this id and stores the result, returning it. An error
// from update aborts without writing. The write is conditional on the record not having changed
// since it was read, and a lost race re-reads and re-applies update, so a concurrent revoke and
// edit never undo each other. update may therefore run more than once, and must only change the
// key it is given; it may not change ID or Hash.
func (s *Store) UpdateKey(ctx context.Context, id string, update func(*apikey.Key) error) (*apikey.Key, error) {
	hash, err := s.hashByID(ctx, id)
	if err != nil {
		return nil, err
	}
	for attempt := range updateAttempts {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return nil, err
			}
		}
		k, version, err := s.keyByHash(ctx, hash)
		if err != nil {
			return nil, err
		}
		if err := update(k); err != nil {
			return nil, err
		}
		if k.ID != id || k.Hash != hash {
			return nil, fmt.Errorf("dynamostore: UpdateKey %s: the key's ID and Hash cannot change", id)
		}
		err = s.putIfVersion(ctx, k, version)
		if ConditionFailed(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return k, nil
	}
	return nil, fmt.Errorf("dynamostore: UpdateKey %s: %w", id, ErrConflict)
}

// putIfVersion replaces the key's item if it still carries version.
func (s *Store) putIfVersion(ctx context.Context, k *apikey.Key, version int64) error {
	item, err := encodeKey(k, version+1)
	if err != nil {
		return err
	}
	return s.putIf(ctx, s.tables.APIKeys, item, expression.Name(attrKeyVersion).Equal(expression.Value(version)))
}

// CountKeys counts the keys with a COUNT scan. Only bootstrap asks (is the store empty?), so a
// scan's cost is fine and no counter item has to be kept in step.
func (s *Store) CountKeys(ctx context.Context) (int, error) {
	n := 0
	pages := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{
		TableName:      aws.String(s.tables.APIKeys),
		Select:         types.SelectCount,
		ConsistentRead: aws.Bool(true),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return 0, &OpError{Op: "Scan", Table: s.tables.APIKeys, Err: err}
		}
		n += int(page.Count)
	}
	return n, nil
}

// backoff waits a little before retry attempt (1-based), with jitter so racing writers spread out.
func backoff(ctx context.Context, attempt int) error {
	d := time.Duration(attempt) * (5*time.Millisecond + rand.N(10*time.Millisecond))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
