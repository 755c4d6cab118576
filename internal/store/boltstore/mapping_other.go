//go:build !linux

package boltstore

// releaseMapping does nothing off Linux, whose folio mapping mapping_linux.go works around.
func (s *Store) releaseMapping() error { return nil }
