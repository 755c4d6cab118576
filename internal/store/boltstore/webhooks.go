package boltstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/secureai-gateway/gateway/internal/webhook"
	bolt "go.etcd.io/bbolt"
)

var (
	bucketWebhooks = []byte("webhooks")         // endpoint id → endpoint
	bucketAttempts = []byte("webhook_attempts") // endpoint id NUL at NUL delivery id NUL attempt → attempt
	bucketPending  = []byte("webhook_pending")  // delivery id NUL attempt → pendingDelivery
)

// CreateEndpoint implements webhook.Store.
func (s *Store) CreateEndpoint(_ context.Context, e *webhook.Endpoint) error {
	raw, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketWebhooks)
		if b.Get([]byte(e.ID)) != nil {
			return fmt.Errorf("boltstore: webhook endpoint %s already exists", e.ID)
		}
		return b.Put([]byte(e.ID), raw)
	})
}

// Endpoint implements webhook.Store.
func (s *Store) Endpoint(_ context.Context, id string) (*webhook.Endpoint, error) {
	var e *webhook.Endpoint
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		e, err = decodeEndpoint(tx.Bucket(bucketWebhooks).Get([]byte(id)))
		return err
	})
	return e, err
}

func decodeEndpoint(raw []byte) (*webhook.Endpoint, error) {
	if raw == nil {
		return nil, webhook.ErrNotFound
	}
	var e webhook.Endpoint
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("boltstore: corrupt webhook endpoint: %w", err)
	}
	return &e, nil
}

// Endpoints implements webhook.Store.
func (s *Store) Endpoints(context.Context) ([]webhook.Endpoint, error) {
	var out []webhook.Endpoint
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketWebhooks).ForEach(func(_, v []byte) error {
			e, err := decodeEndpoint(v)
			if err != nil {
				return err
			}
			out = append(out, *e)
			return nil
		})
	})
	slices.SortFunc(out, func(a, b webhook.Endpoint) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, err
}

// UpdateEndpoint implements webhook.Store; bolt's single writer makes it atomic.
func (s *Store) UpdateEndpoint(_ context.Context, id string, fn func(*webhook.Endpoint) error) (*webhook.Endpoint, error) {
	var e *webhook.Endpoint
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketWebhooks)
		var err error
		if e, err = decodeEndpoint(b.Get([]byte(id))); err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
		e.ID = id
		raw, err := json.Marshal(e)
		if err != nil {
			return err
		}
		return b.Put([]byte(id), raw)
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// DeleteEndpoint implements webhook.Store.
func (s *Store) DeleteEndpoint(_ context.Context, id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketWebhooks)
		if b.Get([]byte(id)) == nil {
			return webhook.ErrNotFound
		}
		if err := b.Delete([]byte(id)); err != nil {
			return err
		}
		return deletePrefix(tx.Bucket(bucketAttempts), attemptPrefix(id))
	})
}

func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

func attemptPrefix(endpointID string) []byte { return []byte(endpointID + "\x00") }

func attemptKey(a webhook.Attempt) []byte {
	return []byte(a.EndpointID + "\x00" + a.At.UTC().Format("20060102T150405.000000000Z") + "\x00" + a.DeliveryID + "\x00" + strconv.Itoa(a.Attempt))
}

// RecordAttempt implements webhook.Store, keeping the newest webhook.AttemptsKept per endpoint.
func (s *Store) RecordAttempt(_ context.Context, a webhook.Attempt) error {
	raw, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAttempts)
		if err := b.Put(attemptKey(a), raw); err != nil {
			return err
		}
		prefix := attemptPrefix(a.EndpointID)
		var keys [][]byte
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			keys = append(keys, slices.Clone(k))
		}
		for _, k := range keys[:max(0, len(keys)-webhook.AttemptsKept)] {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// Attempts implements webhook.Store.
func (s *Store) Attempts(_ context.Context, endpointID string, limit int) ([]webhook.Attempt, error) {
	var out []webhook.Attempt
	prefix := attemptPrefix(endpointID)
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketAttempts).Cursor()
		// Seek past the prefix's last key (prefix then 0xFF), then walk back.
		var k, v []byte
		if k, _ = c.Seek(append(slices.Clone(prefix), 0xFF)); k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, v = c.Prev() {
			var a webhook.Attempt
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("boltstore: corrupt webhook attempt: %w", err)
			}
			out = append(out, a)
		}
		return nil
	})
	return out, err
}

// pendingDelivery is a queued delivery and when it is due.
type pendingDelivery struct {
	Due      time.Time        `json:"due"`
	Delivery webhook.Delivery `json:"delivery"`
}

func pendingKey(d webhook.Delivery) []byte { return []byte(d.ID + "\x00" + strconv.Itoa(d.Attempt)) }

// Pending returns the store's queue of deliveries waiting for an attempt (webhook.Pending).
func (s *Store) Pending() webhook.Pending { return pendingQueue{s} }

type pendingQueue struct{ s *Store }

func (q pendingQueue) Put(_ context.Context, d webhook.Delivery, due time.Time) error {
	raw, err := json.Marshal(pendingDelivery{Due: due.UTC(), Delivery: d})
	if err != nil {
		return err
	}
	return q.s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketPending).Put(pendingKey(d), raw) })
}

// Due scans the whole bucket: the local queue holds a handful of deliveries, not millions.
func (q pendingQueue) Due(_ context.Context, now time.Time, limit int) ([]webhook.Delivery, error) {
	var due []pendingDelivery
	err := q.s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketPending).ForEach(func(_, v []byte) error {
			var p pendingDelivery
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("boltstore: corrupt pending delivery: %w", err)
			}
			if !p.Due.After(now) {
				due = append(due, p)
			}
			return nil
		})
	})
	slices.SortFunc(due, func(a, b pendingDelivery) int { return a.Due.Compare(b.Due) })
	out := make([]webhook.Delivery, 0, min(limit, len(due)))
	for _, p := range due[:min(limit, len(due))] {
		out = append(out, p.Delivery)
	}
	return out, err
}

func (q pendingQueue) Remove(_ context.Context, d webhook.Delivery) error {
	return q.s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketPending).Delete(pendingKey(d)) })
}
