package boltstore_test

import (
	"testing"

	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/storetest"
)

func TestReceiptsContract(t *testing.T) {
	storetest.RunReceipts(t, func(t *testing.T) receipt.Store { return openStore(t) })
}
