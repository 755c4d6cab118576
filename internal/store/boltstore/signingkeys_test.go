package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
)

func TestSigningKeysContract(t *testing.T) {
	storetest.RunSigningKeys(t, func(t *testing.T) signing.Store { return openStore(t) })
}

func openStore(t *testing.T) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "gateway.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
