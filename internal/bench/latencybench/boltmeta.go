package latencybench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// What the gateway's bbolt store holds. The file grows in steps (doubling up to 16 MiB, then by
// 16 MiB), so its size alone shows growth only coarsely: the high-water mark of its pages, read
// from its meta page, moves with every transaction that needs a new page.

// bbolt's on-disk meta page: a 16-byte page header, then magic, version, page size, flags, the
// root bucket (page, sequence), the freelist page, the high-water page id, the transaction id
// and an FNV-64a checksum of the meta fields before it.
const (
	boltMagic       = 0xED0CDAED
	metaMagicAt     = 16
	metaPageSizeAt  = 24
	metaPgidAt      = 56
	metaTxidAt      = 64
	metaChecksumAt  = 72
	metaMinPageSize = 1024
)

// boltHighWater returns the bytes below the high-water mark of the bbolt file at path (pages in
// use or freed, never the unused tail). It reads the two meta pages without opening the database,
// which the running gateway holds locked, and takes the valid one of the later transaction.
func boltHighWater(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	first := make([]byte, metaMinPageSize)
	if _, err := io.ReadFull(f, first); err != nil {
		return 0, fmt.Errorf("bolt meta: %w", err)
	}
	pageSize := int64(binary.LittleEndian.Uint32(first[metaPageSizeAt:]))
	if pageSize < metaMinPageSize || pageSize > 1<<20 {
		return 0, fmt.Errorf("bolt meta: page size %d", pageSize)
	}
	second := make([]byte, metaMinPageSize)
	if _, err := f.ReadAt(second, pageSize); err != nil {
		return 0, fmt.Errorf("bolt meta: %w", err)
	}
	return highWater(first, second)
}

// highWater picks the current of two meta pages (their first metaMinPageSize bytes): valid
// magic and checksum, the later transaction; a page caught mid-write fails its checksum.
func highWater(metas ...[]byte) (int64, error) {
	best, bestTx := int64(-1), uint64(0)
	for _, m := range metas {
		if len(m) < metaChecksumAt+8 || binary.LittleEndian.Uint32(m[metaMagicAt:]) != boltMagic {
			continue
		}
		if metaChecksum(m) != binary.LittleEndian.Uint64(m[metaChecksumAt:]) {
			continue
		}
		if tx := binary.LittleEndian.Uint64(m[metaTxidAt:]); best < 0 || tx > bestTx {
			pageSize := int64(binary.LittleEndian.Uint32(m[metaPageSizeAt:]))
			best, bestTx = int64(binary.LittleEndian.Uint64(m[metaPgidAt:]))*pageSize, tx
		}
	}
	if best < 0 {
		return 0, errors.New("bolt meta: no valid meta page")
	}
	return best, nil
}

// metaChecksum is what bbolt stores after a meta page's fields: FNV-64a of them.
func metaChecksum(m []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(m[metaMagicAt:metaChecksumAt])
	return h.Sum64()
}

// BucketUse is what one top-level bucket of the store holds (nested buckets included).
type BucketUse struct {
	Name  string
	Keys  int
	Bytes int // bytes of the pages it occupies
}

// StoreUse is the store's content once the gateway has stopped.
type StoreUse struct {
	Buckets   []BucketUse // largest first
	FreePages int         // pages freed and reusable
	PageSize  int
}

// boltUse opens the stopped gateway's store read-only and sizes its buckets.
func boltUse(path string) (StoreUse, error) {
	var u StoreUse
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return u, fmt.Errorf("opening the store after the run: %w", err)
	}
	defer db.Close()
	u.FreePages, u.PageSize = db.Stats().FreePageN, db.Info().PageSize
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			s := b.Stats()
			u.Buckets = append(u.Buckets, BucketUse{Name: string(name), Keys: s.KeyN, Bytes: s.BranchAlloc + s.LeafAlloc})
			return nil
		})
	})
	slices.SortFunc(u.Buckets, func(a, b BucketUse) int { return b.Bytes - a.Bytes })
	return u, err
}
