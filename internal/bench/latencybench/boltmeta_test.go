package latencybench

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// The high-water mark read from the meta pages is what bbolt itself reports as the size of the
// database in use (Tx.Size: the high-water page id times the page size).
func TestBoltHighWaterMatchesBbolt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	for batch := range 5 {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			for i := range 500 {
				if err := b.Put(fmt.Appendf(nil, "key-%d-%d", batch, i), make([]byte, 200)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var want int64
		_ = db.View(func(tx *bolt.Tx) error { want = tx.Size(); return nil })
		got, err := boltHighWater(path) // read while the database is open, as during a run
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("after batch %d: high-water %d, bbolt says %d", batch, got, want)
		}
	}
	fi, _ := os.Stat(path)
	if hw, _ := boltHighWater(path); hw <= 4*4096 || hw > fi.Size() {
		t.Errorf("high-water %d for a file of %d bytes after 2500 values of 200 B", hw, fi.Size())
	}
	db.Close()
}

// A meta page caught mid-write (bad checksum) or not a meta page is passed over for the other.
func TestHighWaterTakesTheValidLaterMeta(t *testing.T) {
	meta := func(pgid, txid uint64) []byte {
		m := make([]byte, metaMinPageSize)
		binary.LittleEndian.PutUint32(m[metaMagicAt:], boltMagic)
		binary.LittleEndian.PutUint32(m[metaPageSizeAt:], 4096)
		binary.LittleEndian.PutUint64(m[metaPgidAt:], pgid)
		binary.LittleEndian.PutUint64(m[metaTxidAt:], txid)
		binary.LittleEndian.PutUint64(m[metaChecksumAt:], metaChecksum(m))
		return m
	}
	older, newer := meta(10, 7), meta(12, 8)
	if got, err := highWater(older, newer); err != nil || got != 12*4096 {
		t.Errorf("two valid metas: %d, %v; want the later one's %d", got, err, 12*4096)
	}
	torn := meta(99, 9)
	torn[metaPgidAt] ^= 1
	if got, err := highWater(older, torn); err != nil || got != 10*4096 {
		t.Errorf("later meta torn: %d, %v; want the older one's %d", got, err, 10*4096)
	}
	if _, err := highWater(torn, make([]byte, metaMinPageSize)); err == nil {
		t.Error("no valid meta: want an error")
	}
}
