package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/secureai-gateway/gateway/internal/reqstats"
	bolt "go.etcd.io/bbolt"
)

// bucketReqStats holds the request counts over time (reqstats): one row per resolution and
// bucket start, keyed [resolution][start, big-endian unix seconds] so each resolution's rows are in
// time order, valued as the Counts' int64s, big-endian. A flush adds to them in one transaction,
// at most once a minute; the sweep removes rows past reqstats.Retention.
var bucketReqStats = []byte("request_stats")

const statsValueLen = 8 * len(reqstats.Counts{}) * len(reqstats.Counts{}[0])

func statsKey(res reqstats.Resolution, start time.Time) []byte {
	k := make([]byte, 9)
	k[0] = byte(res)
	binary.BigEndian.PutUint64(k[1:], uint64(start.Unix()))
	return k
}

func decodeStats(v []byte) (reqstats.Counts, error) {
	var n reqstats.Counts
	// A row written before a surface was added holds the surfaces of its day, a prefix of today's.
	if len(v) > statsValueLen || len(v)%(8*len(n[0])) != 0 {
		return n, errors.New("boltstore: corrupt request stats row")
	}
	for s := range len(v) / (8 * len(n[0])) {
		for o := range n[s] {
			n[s][o] = int64(binary.BigEndian.Uint64(v))
			v = v[8:]
		}
	}
	return n, nil
}

func encodeStats(n *reqstats.Counts) []byte {
	v := make([]byte, 0, statsValueLen)
	for s := range n {
		for o := range n[s] {
			v = binary.BigEndian.AppendUint64(v, uint64(n[s][o]))
		}
	}
	return v
}

// AddRequestStats implements reqstats.Store, all buckets in one transaction.
func (s *Store) AddRequestStats(_ context.Context, bs []reqstats.Bucket) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketReqStats)
		for _, bk := range bs {
			k := statsKey(bk.Res, bk.Start)
			n := bk.N
			if v := b.Get(k); v != nil {
				old, err := decodeStats(v)
				if err != nil {
					return err
				}
				n.Add(&old)
			}
			if err := b.Put(k, encodeStats(&n)); err != nil {
				return err
			}
		}
		return nil
	})
}

// RequestStats implements reqstats.Store.
func (s *Store) RequestStats(_ context.Context, res reqstats.Resolution, from, to time.Time) ([]reqstats.Bucket, error) {
	var out []reqstats.Bucket
	end := statsKey(res, to)
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketReqStats).Cursor()
		for k, v := c.Seek(statsKey(res, from)); k != nil && string(k) < string(end); k, v = c.Next() {
			n, err := decodeStats(v)
			if err != nil {
				return err
			}
			out = append(out, reqstats.Bucket{Res: res, Start: time.Unix(int64(binary.BigEndian.Uint64(k[1:])), 0).UTC(), N: n})
		}
		return nil
	})
	return out, err
}

// sweepReqStats deletes up to limit rows past their retention, each resolution's oldest first.
func sweepReqStats(tx *bolt.Tx, now time.Time, limit int) error {
	b := tx.Bucket(bucketReqStats)
	var done [][]byte
	for _, res := range []reqstats.Resolution{reqstats.Minute, reqstats.Hour} {
		c := b.Cursor()
		for k, _ := c.Seek([]byte{byte(res)}); k != nil && k[0] == byte(res) && len(done) < limit; k, _ = c.Next() {
			start := time.Unix(int64(binary.BigEndian.Uint64(k[1:])), 0)
			if now.Before(reqstats.Bucket{Res: res, Start: start}.Expires()) {
				break
			}
			done = append(done, bytes.Clone(k))
		}
	}
	for _, k := range done {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// SweepRequestStats removes the request stats rows expired at now (the flusher's sweep does it
// every few minutes; tests call it with a clock of their own).
func (s *Store) SweepRequestStats(now time.Time) error {
	return s.db.Update(func(tx *bolt.Tx) error { return sweepReqStats(tx, now, sweepBatch) })
}
