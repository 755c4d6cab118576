package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/secureai-gateway/gateway/internal/store/boltstore"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
)

func TestKeysContract(t *testing.T) {
	storetest.RunKeys(t, func(t *testing.T) storetest.KeyStore {
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "gateway.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
