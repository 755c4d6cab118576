package boltstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/secureai-gateway/gateway/internal/receipt"
	bolt "go.etcd.io/bbolt"
)

// Receipts (receipt.Store): bundle id → record. Nothing deletes expired receipts locally; they
// read as absent, and a local store never grows to a size where that matters.

var bucketReceipts = []byte("receipts")

// PutReceipt implements receipt.Store.
func (s *Store) PutReceipt(_ context.Context, r receipt.Record) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketReceipts)
		if err != nil {
			return err
		}
		if old := b.Get([]byte(r.BundleID)); old != nil {
			if prev, err := decodeReceipt(old); err != nil || time.Now().Before(prev.ExpiresAt) {
				return receipt.ErrExists
			}
		}
		return b.Put([]byte(r.BundleID), raw)
	})
}

// Receipt implements receipt.Store.
func (s *Store) Receipt(_ context.Context, bundleID string) (receipt.Record, error) {
	var r receipt.Record
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketReceipts)
		if b == nil || b.Get([]byte(bundleID)) == nil {
			return receipt.ErrNotFound
		}
		var err error
		r, err = decodeReceipt(b.Get([]byte(bundleID)))
		return err
	})
	if err == nil && !time.Now().Before(r.ExpiresAt) {
		return receipt.Record{}, receipt.ErrNotFound
	}
	return r, err
}

func decodeReceipt(raw []byte) (receipt.Record, error) {
	var r receipt.Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("boltstore: corrupt receipt record: %w", err)
	}
	return r, nil
}
