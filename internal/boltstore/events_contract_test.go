package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/boltstore"
	"github.com/secureai-gateway/gateway/internal/storetest"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

func openStore(t *testing.T) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestWebhooksContract(t *testing.T) {
	storetest.RunWebhooks(t, func(t *testing.T) webhook.Store { return openStore(t) })
}

func TestAuditContract(t *testing.T) {
	storetest.RunAudit(t, func(t *testing.T) audit.Store { return openStore(t).AuditLog() })
}
