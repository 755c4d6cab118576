package boltstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/secureai-gateway/gateway/internal/audit"
	bolt "go.etcd.io/bbolt"
)

// bucketAudit holds audit entries under their sort key (time, id), so a range scan backwards is
// the newest-first listing. Entries are written behind (writebehind.go); expired ones are skipped
// on read and deleted by the sweeper.
var bucketAudit = []byte("audit")

type auditRecord struct {
	Entry   audit.Entry `json:"entry"`
	Expires time.Time   `json:"expires"`
}

// AuditLog returns the store's audit log (audit.Store).
func (s *Store) AuditLog() audit.Store { return auditLog{s: s, now: time.Now} }

type auditLog struct {
	s   *Store
	now func() time.Time
}

// Put implements audit.Store. The key derives from the event, so a redelivery finds it.
func (l auditLog) Put(_ context.Context, e audit.Entry, expires time.Time) (bool, error) {
	raw, err := json.Marshal(auditRecord{Entry: e, Expires: expires.UTC()})
	if err != nil {
		return false, err
	}
	key := e.SortKey()
	p := l.s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hasAudit(key) {
		return false, nil
	}
	exists := false
	err = l.s.db.View(func(tx *bolt.Tx) error {
		exists = tx.Bucket(bucketAudit).Get([]byte(key)) != nil
		return nil
	})
	if err != nil || exists {
		return false, err
	}
	p.audit[key] = raw
	p.wrote()
	return true, nil
}

// Query implements audit.Store.
func (l auditLog) Query(_ context.Context, q audit.Query) (audit.Page, error) {
	if err := l.s.Flush(); err != nil { // a listing reads the file: what was written is listed
		return audit.Page{}, err
	}
	lo, hi := q.Bounds()
	now := l.now()
	var page audit.Page
	err := l.s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketAudit).Cursor()
		k, v := c.Seek([]byte(hi))
		if k == nil {
			k, v = c.Last()
		}
		for ; k != nil && string(k) >= lo; k, v = c.Prev() {
			if string(k) >= hi {
				continue
			}
			var r auditRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("boltstore: corrupt audit entry: %w", err)
			}
			if !now.Before(r.Expires) || !q.Matches(&r.Entry) {
				continue
			}
			if len(page.Entries) == q.Limit {
				page.Next = audit.Cursor(&page.Entries[len(page.Entries)-1])
				return nil
			}
			page.Entries = append(page.Entries, r.Entry)
		}
		return nil
	})
	return page, err
}

// sweepAudit deletes up to limit entries past their retention, oldest first. Entries are kept in
// time order and every entry of a deployment has the same retention, so the sweep stops at the
// first one still kept.
func sweepAudit(tx *bolt.Tx, now time.Time, limit int) error {
	b := tx.Bucket(bucketAudit)
	var done [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil && len(done) < limit; k, v = c.Next() {
		var r auditRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("boltstore: corrupt audit entry: %w", err)
		}
		if now.Before(r.Expires) {
			break
		}
		done = append(done, bytes.Clone(k))
	}
	for _, k := range done {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
