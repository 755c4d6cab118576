// Package boltstore is the embedded store for running the gateway on one machine: a single bbolt
// file, no server, no AWS account. It implements the same interfaces as the DynamoDB store.
package boltstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

var (
	bucketKeys   = []byte("api_keys")   // hash → key record
	bucketKeyIDs = []byte("api_key_id") // id → hash
)

// Store is the embedded store.
type Store struct {
	db *bolt.DB
	p  *pending // writes not yet committed (writebehind.go)
}

// Open opens (creating if needed) the store file at path and starts committing its writes every
// FlushInterval; Close commits the rest.
func Open(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("boltstore: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("boltstore: %s is in use by another gateway process", path)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: opening %s: %w", path, err)
	}
	var newestReceipt []byte
	err = db.Update(func(tx *bolt.Tx) error {
		defer func() { newestReceipt, _ = tx.Bucket(bucketReceipts).Cursor().Last() }()
		for _, b := range [][]byte{bucketKeys, bucketKeyIDs, bucketIdem, bucketLimits, bucketUsers, bucketWebhooks, bucketAttempts, bucketPending, bucketAudit, bucketReceipts, bucketReceiptExpiry, bucketReqStats} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return releaseDeadClaims(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: %w", err)
	}
	s := &Store{db: db, p: newPending()}
	s.p.newestReceipt = string(newestReceipt)
	go s.run(FlushInterval)
	return s, nil
}

// Close commits the pending writes and closes the file.
func (s *Store) Close() error {
	return errors.Join(s.closePending(), s.db.Close())
}

// keyRecord is how a key is kept: the public fields plus the secret's hash.
type keyRecord struct {
	apikey.Key
	Hash string `json:"hash"`
}

// CreateKey stores a new key; its hash must be set.
func (s *Store) CreateKey(_ context.Context, k *apikey.Key) error {
	raw, err := json.Marshal(keyRecord{Key: *k, Hash: k.Hash})
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		keys := tx.Bucket(bucketKeys)
		if keys.Get([]byte(k.Hash)) != nil {
			return apikey.ErrExists
		}
		if err := keys.Put([]byte(k.Hash), raw); err != nil {
			return err
		}
		return tx.Bucket(bucketKeyIDs).Put([]byte(k.ID), []byte(k.Hash))
	})
}

// KeyByHash implements identity.KeyFinder.
func (s *Store) KeyByHash(_ context.Context, hash string) (*apikey.Key, error) {
	var k *apikey.Key
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		k, err = decodeKey(tx.Bucket(bucketKeys).Get([]byte(hash)))
		return err
	})
	return k, err
}

// CountKeys returns how many keys exist.
func (s *Store) CountKeys(context.Context) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketKeys).Stats().KeyN
		return nil
	})
	return n, err
}

func decodeKey(raw []byte) (*apikey.Key, error) {
	if raw == nil {
		return nil, apikey.ErrNotFound
	}
	var rec keyRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("boltstore: corrupt key record: %w", err)
	}
	rec.Key.Hash = rec.Hash
	return &rec.Key, nil
}

// Path is the store file's location.
func (s *Store) Path() string { return s.db.Path() }
