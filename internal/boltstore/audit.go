package boltstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/secureai-gateway/gateway/internal/audit"
	bolt "go.etcd.io/bbolt"
)

// bucketAudit holds audit entries under their sort key (time, id), so a range scan backwards is
// the newest-first listing. Expired entries are skipped on read.
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
	created := false
	err = l.s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAudit)
		key := []byte(e.SortKey())
		if b.Get(key) != nil {
			return nil
		}
		created = true
		return b.Put(key, raw)
	})
	return created, err
}

// Query implements audit.Store.
func (l auditLog) Query(_ context.Context, q audit.Query) (audit.Page, error) {
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
