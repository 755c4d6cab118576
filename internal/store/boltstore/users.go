package boltstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/billing"
	bolt "go.etcd.io/bbolt"
)

// bucketUsers holds users' billing records by id. A user is read from the file once and then
// kept in memory, where every charge's check-and-add runs under one lock: atomic, and no commit
// on the request's path (writebehind.go commits the changed records).
var bucketUsers = []byte("users")

// User implements billing.Store.
func (s *Store) User(_ context.Context, id string) (*billing.User, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	e, err := s.userLocked(id)
	if err != nil {
		return nil, err
	}
	if e.u == nil {
		return nil, billing.ErrNotFound
	}
	u := *e.u
	return &u, nil
}

// CreateUser implements billing.Store.
func (s *Store) CreateUser(_ context.Context, u *billing.User) error {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	e, err := s.userLocked(u.ID)
	if err != nil {
		return err
	}
	if e.u != nil {
		return billing.ErrExists
	}
	kept := *u // the caller's record stays its own
	s.setUserLocked(e, &kept)
	return nil
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
	return s.modifyUser(id, c.Apply)
}

// RefundExpired gives back every reservation hold that expired before now, on every user, and
// reports how many it removed. Each user's refund is one step under the lock a settlement also
// takes, so a hold is settled or refunded, never both; the refund is committed with the user's
// record like any charge. It reads every user in the file: run it in the background (at start,
// and periodically), never on a request's path.
func (s *Store) RefundExpired(_ context.Context, now time.Time) (int, error) {
	var ids []string
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketUsers).ForEach(func(k, raw []byte) error {
			if u, err := decodeUser(raw); err == nil && expiredHold(u, now) {
				ids = append(ids, string(k))
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("boltstore: listing users: %w", err)
	}
	s.p.mu.Lock()
	for id, e := range s.p.users { // the authoritative copies, committed or not
		if e.u != nil && expiredHold(e.u, now) {
			ids = append(ids, id)
		}
	}
	s.p.mu.Unlock()
	slices.Sort(ids)
	n := 0
	for _, id := range slices.Compact(ids) {
		err := s.modifyUser(id, func(u *billing.User) error {
			if m := u.RefundExpired(now); m > 0 {
				n += m
				return nil
			}
			return errNothingExpired // settled since it was listed: nothing to write
		})
		if err != nil && !errors.Is(err, errNothingExpired) && !errors.Is(err, billing.ErrNotFound) {
			return n, err
		}
	}
	return n, nil
}

var errNothingExpired = errors.New("boltstore: no expired hold")

// ListUsers implements billing.Lister: the file's records, each replaced by the one kept in memory
// (committed or not), and those only in memory, ordered by id.
func (s *Store) ListUsers(_ context.Context) ([]*billing.User, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	byID := map[string]*billing.User{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketUsers).ForEach(func(k, raw []byte) error {
			u, err := decodeUser(raw)
			if err != nil {
				return err
			}
			byID[string(k)] = u
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: listing users: %w", err)
	}
	for id, e := range s.p.users {
		if e.u != nil {
			u := *e.u
			byID[id] = &u
		}
	}
	out := make([]*billing.User, 0, len(byID))
	for _, u := range byID {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b *billing.User) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func expiredHold(u *billing.User, now time.Time) bool {
	for _, h := range u.Holds {
		if h.Expires.Before(now) {
			return true
		}
	}
	return false
}

// modifyUser runs fn on a copy of the user under the lock and keeps the result; an error from fn
// changes nothing.
func (s *Store) modifyUser(id string, fn func(*billing.User) error) error {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	e, err := s.userLocked(id)
	if err != nil {
		return err
	}
	if e.u == nil {
		return billing.ErrNotFound
	}
	u := new(billing.User)
	*u = *e.u // a copy: fn's error must leave the kept record as it was
	if err := fn(u); err != nil {
		return err
	}
	s.setUserLocked(e, u)
	return nil
}

// userLocked returns the user's entry, reading it from the file the first time. An unknown user's
// entry is not kept (lookups of made-up ids must not grow memory) until it is created. Call it
// with p.mu held.
func (s *Store) userLocked(id string) (*userEntry, error) {
	if e, ok := s.p.users[id]; ok {
		return e, nil
	}
	e := &userEntry{}
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketUsers).Get([]byte(id))
		if raw == nil {
			return nil
		}
		var err error
		e.u, err = decodeUser(raw)
		return err
	})
	if err != nil {
		return nil, err
	}
	if e.u != nil {
		s.p.users[id] = e
	}
	return e, nil
}

func (s *Store) setUserLocked(e *userEntry, u *billing.User) {
	e.u = u
	s.p.users[u.ID] = e
	if !e.dirty {
		e.dirty = true
		s.p.wrote()
	}
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
