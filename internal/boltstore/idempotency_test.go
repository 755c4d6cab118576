package boltstore

import (
	"path/filepath"
	"testing"

	"github.com/secureai-gateway/gateway/internal/idempotency"
	"github.com/secureai-gateway/gateway/internal/storetest"
)

func TestIdempotencyContract(t *testing.T) {
	storetest.RunIdempotency(t, func(t *testing.T) idempotency.Store {
		s, err := Open(filepath.Join(t.TempDir(), "gateway.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
