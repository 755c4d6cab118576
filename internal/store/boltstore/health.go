package boltstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/secureai-gateway/gateway/internal/sharedhealth"
	bolt "go.etcd.io/bbolt"
)

// Provider health (sharedhealth.Store): "<key>\xff<env>" → the report. 0xff never occurs in
// UTF-8, so a key's reports are exactly the entries under its prefix.

var bucketHealth = []byte("provider_health")

type healthRecord struct {
	Fails   int       `json:"fails"`
	Last    time.Time `json:"last"`
	Until   time.Time `json:"until"`
	Expires time.Time `json:"expires"`
}

func healthPrefix(key string) []byte { return append([]byte(key), 0xff) }

// PutHealth implements sharedhealth.Store; it also drops the key's reports that have expired.
func (s *Store) PutHealth(_ context.Context, r sharedhealth.Report) error {
	raw, err := json.Marshal(healthRecord{Fails: r.Fails, Last: r.Last, Until: r.Until, Expires: r.Expires})
	if err != nil {
		return err
	}
	now := time.Now()
	return s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketHealth)
		if err != nil {
			return err
		}
		prefix := healthPrefix(r.Key)
		var expired [][]byte
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var rec healthRecord
			if json.Unmarshal(v, &rec) != nil || !rec.Expires.After(now) {
				expired = append(expired, bytes.Clone(k))
			}
		}
		for _, k := range expired {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return b.Put(append(prefix, r.Env...), raw)
	})
}

// DeleteHealth implements sharedhealth.Store.
func (s *Store) DeleteHealth(_ context.Context, key, env string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketHealth)
		if b == nil {
			return nil
		}
		return b.Delete(append(healthPrefix(key), env...))
	})
}

// Health implements sharedhealth.Store.
func (s *Store) Health(_ context.Context, keys []string, now time.Time) (map[string][]sharedhealth.Report, error) {
	out := map[string][]sharedhealth.Report{}
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketHealth)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for _, key := range keys {
			prefix := healthPrefix(key)
			for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
				var rec healthRecord
				if err := json.Unmarshal(v, &rec); err != nil {
					return fmt.Errorf("boltstore: corrupt provider health record %q: %w", k, err)
				}
				if !rec.Expires.After(now) {
					continue
				}
				out[key] = append(out[key], sharedhealth.Report{Key: key, Env: string(k[len(prefix):]), Fails: rec.Fails,
					Last: rec.Last, Until: rec.Until, Expires: rec.Expires})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
