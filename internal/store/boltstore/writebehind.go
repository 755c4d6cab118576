package boltstore

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/signing"
	bolt "go.etcd.io/bbolt"
)

// The writes a request makes — its billing charges, its receipt, the audit entries of its events —
// are applied in memory at once and committed to the file together, one transaction per
// FlushInterval, off the path of the answer. A bbolt commit is an fsync (milliseconds on a disk)
// and serialises every writer: one per request was most of a request's cost.
//
// Reads see every write at once: users are kept in memory once read (this process is the file's
// only writer: bbolt locks it), and a pending receipt or audit entry is found before it is
// committed. What a crash (kill -9, power loss) can lose is the last FlushInterval's writes:
// charges then read low — a request served and not billed, never billed twice — and a receipt
// lost reads as not found (receipt.ErrNotFound, which the receipt route explains). A clean
// shutdown (Close) commits everything.

// FlushInterval is how often pending writes are committed; a crash loses at most this long's. The
// pending writes and the commit's page buffers are most of the server's heap under load, so the
// interval also sets its memory: 100 ms instead of 200 took ~4.5 MiB off the resident memory at
// 32 concurrent requests (docs/benchmarks.md), for ten small commits a second instead of five.
const FlushInterval = 100 * time.Millisecond

// WriteBehind is how long a write may stay uncommitted: what a crash can lose (accountapi.Receipts
// tells a caller whose receipt is missing).
func (s *Store) WriteBehind() time.Duration { return FlushInterval }

// flushAt is how many pending writes commit early, so a burst is not held in memory for long.
const flushAt = 4096

// sweepEvery is how often expired receipts, audit entries and request stats are deleted from the
// file.
const sweepEvery = 10 * time.Minute

// pending is what was written and not committed yet. Every field is guarded by mu.
type pending struct {
	mu sync.Mutex
	// users holds every user read or written since the store opened: the authoritative copy.
	users map[string]*userEntry
	// receipts and audit are keyed by their bolt key; an entry leaves once it is committed. A
	// receipt may be a draft (receipts.go: kept as its claims, signed when read).
	receipts map[string]receipt.Record
	audit    map[string][]byte
	n        int // writes since the last commit
	// signer signs the receipts drafted with it when they are read (SignReceiptsWhenRead); nil:
	// a draft is signed when it is committed.
	signer *signing.Signer
	// newestReceipt is the greatest bundle id in the file: an id above it is not there, so a
	// fresh (time-ordered) id is stored and looked up without reading the file.
	newestReceipt string
	// committing is what a Flush took and has not committed yet: still read from here.
	committing struct {
		receipts map[string]receipt.Record
		audit    map[string][]byte
	}

	flushMu sync.Mutex    // one commit at a time
	kick    chan struct{} // asks the flusher to commit now
	stop    chan struct{}
	done    chan struct{}
	closed  sync.Once
}

type userEntry struct {
	u     *billing.User // nil: the user does not exist
	dirty bool          // changed since the last commit
}

func newPending() *pending {
	return &pending{users: map[string]*userEntry{}, receipts: map[string]receipt.Record{}, audit: map[string][]byte{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// wrote counts one pending write and asks for an early commit when enough have gathered. Call it
// with mu held.
func (p *pending) wrote() {
	p.n++
	if p.n == flushAt {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// run commits pending writes every interval (and when kicked), and sweeps expired records every
// sweepEvery, until stop is closed.
func (s *Store) run(interval time.Duration) {
	defer close(s.p.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	lastSweep := time.Time{}
	for {
		select {
		case <-s.p.stop:
			return
		case <-t.C:
		case <-s.p.kick:
		}
		committed, _ := s.flush() // a failed commit keeps its writes pending: retried at the next tick
		if now := time.Now(); now.Sub(lastSweep) >= sweepEvery {
			lastSweep, committed = now, true
			_ = s.sweep(now)
		}
		if committed {
			_ = s.releaseMapping() // best effort: what it fails to release stays mapped, as without it
		}
	}
}

// Flush commits every pending write in one transaction. The server's flusher calls it on a timer;
// a reader that needs the file itself (a listing) calls it first.
func (s *Store) Flush() error {
	_, err := s.flush()
	return err
}

// flush is Flush, and says whether it committed writes.
func (s *Store) flush() (committed bool, err error) {
	p := s.p
	p.flushMu.Lock()
	defer p.flushMu.Unlock()

	p.mu.Lock()
	if p.n == 0 {
		p.mu.Unlock()
		return false, nil
	}
	users := map[string]billing.User{}
	for id, e := range p.users {
		if e.dirty {
			users[id], e.dirty = *e.u, false
		}
	}
	receipts, audit, newest, signer := p.receipts, p.audit, p.newestReceipt, p.signer
	p.receipts, p.audit, p.n = make(map[string]receipt.Record, len(receipts)), make(map[string][]byte, len(audit)), 0
	p.committing.receipts, p.committing.audit = receipts, audit
	p.mu.Unlock()

	encoded, err := encodeReceipts(receipts, signer) // before the file's write lock
	if err == nil {
		err = s.db.Update(func(tx *bolt.Tx) error {
			return commit(tx, users, encoded, newest, audit)
		})
	}

	p.mu.Lock()
	p.committing.receipts, p.committing.audit = nil, nil
	if n := len(encoded); err == nil && n > 0 && encoded[n-1].id > p.newestReceipt {
		p.newestReceipt = encoded[n-1].id
	}
	if err != nil {
		// Put everything back for the next try; a user written since keeps its newer record.
		for id := range users {
			p.users[id].dirty = true // still the newest record or a newer one: either is to commit
		}
		for k, v := range receipts {
			p.receipts[k] = v
		}
		for k, v := range audit {
			p.audit[k] = v
		}
		p.n += len(users) + len(receipts) + len(audit)
	}
	p.mu.Unlock()
	return err == nil, err
}

// commit writes a Flush's users, receipts and audit entries in its transaction (newest: the
// greatest bundle id in the file before it).
func commit(tx *bolt.Tx, users map[string]billing.User, receipts []encodedReceipt, newest string, audit map[string][]byte) error {
	ub := tx.Bucket(bucketUsers)
	for id, u := range users {
		raw, err := json.Marshal(u)
		if err != nil {
			return err
		}
		if err := ub.Put([]byte(id), raw); err != nil {
			return err
		}
	}
	if err := putReceipts(tx, receipts, newest); err != nil {
		return err
	}
	ab := tx.Bucket(bucketAudit)
	ab.FillPercent = appendFill // sort keys start with the time
	for _, k := range slices.Sorted(maps.Keys(audit)) {
		if err := ab.Put([]byte(k), audit[k]); err != nil {
			return err
		}
	}
	return nil
}

// receipt returns a receipt written and not yet committed. Call it with p.mu held.
func (p *pending) receipt(key string) (receipt.Record, bool) {
	if r, ok := p.receipts[key]; ok {
		return r, true
	}
	r, ok := p.committing.receipts[key]
	return r, ok
}

// hasAudit reports whether an audit entry is written and not yet committed. Call it with
// p.mu held.
func (p *pending) hasAudit(key string) bool {
	if _, ok := p.audit[key]; ok {
		return true
	}
	_, ok := p.committing.audit[key]
	return ok
}

// closePending stops the flusher and commits what is left.
func (s *Store) closePending() error {
	s.p.closed.Do(func() { close(s.p.stop) })
	<-s.p.done
	err := s.Flush()
	if err == nil {
		return nil
	}
	return errors.Join(errors.New("boltstore: committing the last writes"), err)
}

// sweepBatch bounds one sweep's deletions, so a sweep never holds the file's write lock for long;
// what is left goes at the next.
const sweepBatch = 10000

// sweep deletes receipts, audit entries and request stats past their retention.
func (s *Store) sweep(now time.Time) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := sweepReceipts(tx, now, sweepBatch); err != nil {
			return err
		}
		if err := sweepAudit(tx, now, sweepBatch); err != nil {
			return err
		}
		return sweepReqStats(tx, now, sweepBatch)
	})
}
