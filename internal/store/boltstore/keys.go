package boltstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/secureai-gateway/gateway/internal/apikey"
	bolt "go.etcd.io/bbolt"
)

// The admin side of keys: find by id, list, update. Same contract as the DynamoDB store
// (internal/testkit/storetest.RunKeys).

// KeyByID finds a key by its public id.
func (s *Store) KeyByID(_ context.Context, id string) (*apikey.Key, error) {
	var k *apikey.Key
	err := s.db.View(func(tx *bolt.Tx) error {
		hash := tx.Bucket(bucketKeyIDs).Get([]byte(id))
		if hash == nil {
			return apikey.ErrNotFound
		}
		var err error
		k, err = decodeKey(tx.Bucket(bucketKeys).Get(hash))
		return err
	})
	return k, err
}

// ListKeys returns every key, oldest first (ties by id).
func (s *Store) ListKeys(context.Context) ([]*apikey.Key, error) {
	keys := []*apikey.Key{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketKeys).ForEach(func(_, raw []byte) error {
			k, err := decodeKey(raw)
			if err != nil {
				return err
			}
			keys = append(keys, k)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(keys, func(a, b *apikey.Key) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return keys, nil
}

// UpdateKey applies update to the key with this id inside one write transaction and returns the
// stored result. An error from update aborts without writing; update may not change ID or Hash.
func (s *Store) UpdateKey(_ context.Context, id string, update func(*apikey.Key) error) (*apikey.Key, error) {
	var k *apikey.Key
	err := s.db.Update(func(tx *bolt.Tx) error {
		hash := tx.Bucket(bucketKeyIDs).Get([]byte(id))
		if hash == nil {
			return apikey.ErrNotFound
		}
		keys := tx.Bucket(bucketKeys)
		var err error
		if k, err = decodeKey(keys.Get(hash)); err != nil {
			return err
		}
		if err := update(k); err != nil {
			return err
		}
		if k.ID != id || k.Hash != string(hash) {
			return fmt.Errorf("boltstore: UpdateKey %s: the key's ID and Hash cannot change", id)
		}
		raw, err := json.Marshal(keyRecord{Key: *k, Hash: k.Hash})
		if err != nil {
			return err
		}
		return keys.Put(hash, raw)
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}
