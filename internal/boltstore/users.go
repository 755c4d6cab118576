package boltstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/secureai-gateway/gateway/internal/billing"
	bolt "go.etcd.io/bbolt"
)

// bucketUsers holds users' billing records by id. bbolt serialises write transactions, so each
// charge's check-and-add is atomic. Requests charge at most twice (reserve, settle): two fsyncs
// per billed local request, the price of not losing money on a crash.
var bucketUsers = []byte("users")

// User implements billing.Store.
func (s *Store) User(_ context.Context, id string) (*billing.User, error) {
	var u *billing.User
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		u, err = decodeUser(tx.Bucket(bucketUsers).Get([]byte(id)))
		return err
	})
	return u, err
}

// CreateUser implements billing.Store.
func (s *Store) CreateUser(_ context.Context, u *billing.User) error {
	raw, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketUsers)
		if b.Get([]byte(u.ID)) != nil {
			return billing.ErrExists
		}
		return b.Put([]byte(u.ID), raw)
	})
}

// UpdateUser implements billing.Store.
func (s *Store) UpdateUser(_ context.Context, id string, update func(*billing.User) error) (*billing.User, error) {
	var u *billing.User
	err := s.modifyUser(id, func(cur *billing.User) error {
		if err := update(cur); err != nil {
			return err
		}
		if cur.ID != id {
			return fmt.Errorf("boltstore: UpdateUser %s: the user's ID cannot change", id)
		}
		u = cur
		return nil
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// Charge implements billing.Store.
func (s *Store) Charge(_ context.Context, id string, c billing.Charge) error {
	return s.modifyUser(id, func(u *billing.User) error {
		if !u.PeriodStart.Equal(c.Period) {
			return billing.ErrStalePeriod
		}
		if !c.Fits(u) {
			return billing.ErrInsufficient
		}
		u.PointsUsed += c.Points
		u.SpendMicros += c.Micros
		return nil
	})
}

// modifyUser runs fn on the stored user inside one write transaction and stores the result; an
// error from fn writes nothing.
func (s *Store) modifyUser(id string, fn func(*billing.User) error) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketUsers)
		u, err := decodeUser(b.Get([]byte(id)))
		if err != nil {
			return err
		}
		if err := fn(u); err != nil {
			return err
		}
		raw, err := json.Marshal(u)
		if err != nil {
			return err
		}
		return b.Put([]byte(id), raw)
	})
}

func decodeUser(raw []byte) (*billing.User, error) {
	if raw == nil {
		return nil, billing.ErrNotFound
	}
	var u billing.User
	if err := json.Unmarshal(raw, &u); err != nil {
		return nil, fmt.Errorf("boltstore: corrupt user record: %w", err)
	}
	return &u, nil
}
