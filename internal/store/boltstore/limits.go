package boltstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/secureai-gateway/gateway/internal/limits"
	bolt "go.etcd.io/bbolt"
)

// bucketLimits holds the local server's request counts as one snapshot. They are counted in
// memory (limits.Memory) and saved here periodically and at shutdown, never per request: a bbolt
// commit is an fsync.
var bucketLimits = []byte("limit_counts")

var limitsSnapshot = []byte("snapshot")

// SaveRequestCounts implements limits.Persister: it replaces the saved counts with rs.
func (s *Store) SaveRequestCounts(_ context.Context, rs []limits.Record) error {
	raw, err := json.Marshal(rs)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketLimits).Put(limitsSnapshot, raw) })
}

// LoadRequestCounts implements limits.Persister.
func (s *Store) LoadRequestCounts(context.Context) ([]limits.Record, error) {
	var rs []limits.Record
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketLimits).Get(limitsSnapshot)
		if raw == nil {
			return nil
		}
		if err := json.Unmarshal(raw, &rs); err != nil {
			return fmt.Errorf("boltstore: corrupt request counts: %w", err)
		}
		return nil
	})
	return rs, err
}
