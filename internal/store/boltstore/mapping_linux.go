package boltstore

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// bbolt reads the file through one shared memory mapping, and Linux maps a page-cache folio whole
// (up to 2 MiB with large folios) the first time a process touches any of its pages. Every commit
// reads the right edge of the buckets it appends to, next to the pages the last commits wrote, so
// the process mapped more and more of what it had written and never read again: its resident
// memory grew with its writes (to ~30 % of the 2-repetition benchmark's 64 MiB file). Dropping
// the mapping's page-table entries after each commit keeps mapped only what is read until the
// next one. MADV_DONTNEED discards nothing of a shared file mapping: the pages stay in the page
// cache, and a later read of them costs a minor fault, not a disk read.

// releaseMapping drops this process's page-table entries for the file's mapping.
func (s *Store) releaseMapping() error {
	// Under a read transaction bbolt cannot remap the file (it grows the mapping only when no
	// reader holds it), so the address and size stay valid for the call.
	return s.db.View(func(tx *bolt.Tx) error {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, s.db.Info().Data, uintptr(tx.Size()), syscall.MADV_DONTNEED); errno != 0 {
			return errno
		}
		return nil
	})
}
