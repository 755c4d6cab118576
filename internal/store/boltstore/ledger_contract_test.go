package boltstore_test

import (
	"testing"

	"github.com/secureai-gateway/gateway/internal/ledger"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
)

// The local server's ledger: the in-memory counter with this store's users and receipts.
func TestLedgerContract(t *testing.T) {
	storetest.RunLedger(t, func(t *testing.T) storetest.LedgerStores {
		s, counts := openStore(t), limits.NewMemory()
		return storetest.LedgerStores{Ledger: ledger.Local{Counter: counts, Users: s, Receipts: s}, Counts: counts, Users: s, Receipts: s}
	})
}
