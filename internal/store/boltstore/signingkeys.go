package boltstore

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/secureai-gateway/gateway/internal/signing"
	bolt "go.etcd.io/bbolt"
)

// The signing keyset (signing.Store): one record, written only by rotation. The file is already
// private to the gateway's user (0600), which is as much protection as a local run has.

var (
	bucketSigning = []byte("signing_keys")
	signingRecord = []byte("keyset")
)

// Keyset implements signing.Store.
func (s *Store) Keyset(context.Context) (signing.Keyset, error) {
	var ks signing.Keyset
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		ks, err = readKeyset(tx)
		return err
	})
	return ks, err
}

// UpdateKeyset implements signing.Store inside one write transaction.
func (s *Store) UpdateKeyset(_ context.Context, update func(signing.Keyset, bool) (signing.Keyset, error)) (signing.Keyset, error) {
	var out signing.Keyset
	err := s.db.Update(func(tx *bolt.Tx) error {
		cur, err := readKeyset(tx)
		exists := err == nil
		if err != nil && !errors.Is(err, signing.ErrNoKeyset) {
			return err
		}
		if out, err = update(cur, exists); err != nil {
			return err
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return err
		}
		b, err := tx.CreateBucketIfNotExists(bucketSigning)
		if err != nil {
			return err
		}
		return b.Put(signingRecord, raw)
	})
	return out, err
}

func readKeyset(tx *bolt.Tx) (signing.Keyset, error) {
	var ks signing.Keyset
	b := tx.Bucket(bucketSigning)
	if b == nil || b.Get(signingRecord) == nil {
		return ks, signing.ErrNoKeyset
	}
	err := json.Unmarshal(b.Get(signingRecord), &ks)
	return ks, err
}
