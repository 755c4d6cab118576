package boltstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/secureai-gateway/gateway/internal/breaker"
	bolt "go.etcd.io/bbolt"
)

// Circuit breakers (breaker.Store): subject → open breaker, and "subject#window" → violation count.

var (
	bucketBreakers   = []byte("circuit_breakers")
	bucketViolations = []byte("breaker_violations")
)

type breakerRecord struct {
	Kind     string    `json:"kind"`
	ID       string    `json:"id"`
	Reason   string    `json:"reason,omitempty"`
	OpenedBy string    `json:"openedBy"`
	OpenedAt time.Time `json:"openedAt"`
	Until    time.Time `json:"until"`
}

type violationRecord struct {
	Count   int       `json:"count"`
	Expires time.Time `json:"expires"`
}

// Breaker implements breaker.Store.
func (s *Store) Breaker(_ context.Context, subject breaker.Subject) (breaker.State, bool, error) {
	var st breaker.State
	var found bool
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBreakers)
		if b == nil || b.Get([]byte(subject.String())) == nil {
			return nil
		}
		var err error
		st, err = decodeBreaker(b.Get([]byte(subject.String())))
		found = err == nil
		return err
	})
	return st, found, err
}

// PutBreaker implements breaker.Store.
func (s *Store) PutBreaker(_ context.Context, st breaker.State) error {
	raw, err := json.Marshal(breakerRecord{Kind: st.Subject.Kind, ID: st.Subject.ID, Reason: st.Reason,
		OpenedBy: st.OpenedBy, OpenedAt: st.OpenedAt, Until: st.Until})
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketBreakers)
		if err != nil {
			return err
		}
		return b.Put([]byte(st.Subject.String()), raw)
	})
}

// DeleteBreaker implements breaker.Store.
func (s *Store) DeleteBreaker(_ context.Context, subject breaker.Subject, openedAt time.Time) (bool, error) {
	deleted := false
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBreakers)
		if b == nil || b.Get([]byte(subject.String())) == nil {
			return nil
		}
		st, err := decodeBreaker(b.Get([]byte(subject.String())))
		if err != nil {
			return err
		}
		if !openedAt.IsZero() && !st.OpenedAt.Equal(openedAt) {
			return nil
		}
		deleted = true
		return b.Delete([]byte(subject.String()))
	})
	return deleted, err
}

// ListBreakers implements breaker.Store.
func (s *Store) ListBreakers(context.Context) ([]breaker.State, error) {
	out := []breaker.State{}
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBreakers)
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, raw []byte) error {
			st, err := decodeBreaker(raw)
			out = append(out, st)
			return err
		})
	})
	return out, err
}

// AddViolation implements breaker.Store; it also drops the subject's expired windows.
func (s *Store) AddViolation(_ context.Context, subject breaker.Subject, window, expires time.Time) (int, error) {
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketViolations)
		if err != nil {
			return err
		}
		prefix := []byte(subject.String() + "#")
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			// A window that ended by the start of this one is stale: judged on the caller's clock
			// (window), never this process's, so a breaker's clock is the only one that counts.
			var rec violationRecord
			if json.Unmarshal(v, &rec) != nil || !window.Before(rec.Expires) {
				if err := c.Delete(); err != nil {
					return err
				}
			}
		}
		key := append(prefix, strconv.FormatInt(window.Unix(), 10)...)
		var rec violationRecord
		if raw := b.Get(key); raw != nil {
			if err := json.Unmarshal(raw, &rec); err != nil {
				return fmt.Errorf("boltstore: corrupt violation count: %w", err)
			}
		}
		rec.Count++
		rec.Expires = expires
		n = rec.Count
		raw, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return b.Put(key, raw)
	})
	return n, err
}

func decodeBreaker(raw []byte) (breaker.State, error) {
	var r breakerRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return breaker.State{}, fmt.Errorf("boltstore: corrupt circuit breaker record: %w", err)
	}
	return breaker.State{Subject: breaker.Subject{Kind: r.Kind, ID: r.ID}, Reason: r.Reason, OpenedBy: r.OpenedBy,
		OpenedAt: r.OpenedAt, Until: r.Until}, nil
}
