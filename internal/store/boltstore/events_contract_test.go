package boltstore_test

import (
	"testing"

	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

func TestWebhooksContract(t *testing.T) {
	storetest.RunWebhooks(t, func(t *testing.T) webhook.Store { return openStore(t) })
}

func TestAuditContract(t *testing.T) {
	storetest.RunAudit(t, func(t *testing.T) audit.Store { return openStore(t).AuditLog() })
}
