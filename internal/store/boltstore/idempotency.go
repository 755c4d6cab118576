package boltstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/secureai-gateway/gateway/internal/idempotency"
	bolt "go.etcd.io/bbolt"
)

// bucketIdem holds idempotency entries under scope NUL key. Expired entries are skipped on read
// and overwritten by the next claim, so no sweeper is needed for correctness.
var bucketIdem = []byte("idempotency")

// idemEntry is one stored entry: a pending claim (Token set, Done false) or a finished record.
type idemEntry struct {
	Done        bool      `json:"done"`
	RequestHash string    `json:"request_hash"`
	Token       string    `json:"token,omitempty"`
	LeaseUntil  time.Time `json:"lease_until,omitzero"`
	Status      int       `json:"status,omitempty"`
	ContentType string    `json:"content_type,omitempty"`
	Body        []byte    `json:"body,omitempty"`
	CreatedAt   time.Time `json:"created_at,omitzero"`
	ExpiresAt   time.Time `json:"expires_at,omitzero"`
}

func (e *idemEntry) live(now time.Time) bool {
	if e.Done {
		return now.Before(e.ExpiresAt)
	}
	return now.Before(e.LeaseUntil)
}

// releaseDeadClaims deletes every pending claim, run as the file is opened. bbolt's file lock lets
// one process at a time open the store, so a claim found then was left by a process that died
// mid-request (SIGKILL, power loss): its retry must run at once, not wait out the lease and then
// be refused. Finished records are kept.
func releaseDeadClaims(tx *bolt.Tx) error {
	b := tx.Bucket(bucketIdem)
	var dead [][]byte
	err := b.ForEach(func(k, raw []byte) error {
		var e idemEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("boltstore: corrupt idempotency record: %w", err)
		}
		if !e.Done {
			dead = append(dead, bytes.Clone(k)) // deleting while iterating would skip entries
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range dead {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func idemKey(scope, key string) []byte { return []byte(scope + "\x00" + key) }

// Claim implements idempotency.Store. bbolt serialises write transactions, which makes the
// read-then-put atomic.
func (s *Store) Claim(_ context.Context, scope, key string, p idempotency.Pending) (idempotency.Claim, error) {
	var c idempotency.Claim
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIdem)
		k := idemKey(scope, key)
		if raw := b.Get(k); raw != nil {
			var e idemEntry
			if err := json.Unmarshal(raw, &e); err != nil {
				return fmt.Errorf("boltstore: corrupt idempotency record: %w", err)
			}
			if e.live(p.Now) {
				c.RequestHash = e.RequestHash
				if !e.Done {
					c.State = idempotency.InProgress
					return nil
				}
				c.State = idempotency.Completed
				c.Record = &idempotency.Record{RequestHash: e.RequestHash, Status: e.Status, ContentType: e.ContentType,
					Body: e.Body, CreatedAt: e.CreatedAt, ExpiresAt: e.ExpiresAt}
				return nil
			}
		}
		raw, err := json.Marshal(idemEntry{RequestHash: p.RequestHash, Token: p.Token, LeaseUntil: p.LeaseUntil})
		if err != nil {
			return err
		}
		c.State = idempotency.Owned
		return b.Put(k, raw)
	})
	return c, err
}

// Complete implements idempotency.Store.
func (s *Store) Complete(_ context.Context, scope, key, token string, rec idempotency.Record) error {
	raw, err := json.Marshal(idemEntry{Done: true, RequestHash: rec.RequestHash, Status: rec.Status, ContentType: rec.ContentType,
		Body: rec.Body, CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt})
	if err != nil {
		return err
	}
	return s.ownedUpdate(scope, key, token, func(b *bolt.Bucket, k []byte) error { return b.Put(k, raw) })
}

// Release implements idempotency.Store.
func (s *Store) Release(_ context.Context, scope, key, token string) error {
	return s.ownedUpdate(scope, key, token, func(b *bolt.Bucket, k []byte) error { return b.Delete(k) })
}

// ownedUpdate runs fn only while token holds the key's pending entry.
func (s *Store) ownedUpdate(scope, key, token string, fn func(b *bolt.Bucket, k []byte) error) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIdem)
		k := idemKey(scope, key)
		raw := b.Get(k)
		if raw == nil {
			return idempotency.ErrNotOwner
		}
		var e idemEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("boltstore: corrupt idempotency record: %w", err)
		}
		if e.Done || e.Token != token {
			return idempotency.ErrNotOwner
		}
		return fn(b, k)
	})
}
