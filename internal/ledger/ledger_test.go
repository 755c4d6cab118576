package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"github.com/secureai-gateway/gateway/internal/limits"
)

// A deployment that bills nothing still counts its requests; the full contract, billed, runs on
// both stores (storetest.RunLedger).
func TestWithoutBillingOnlyTheWindowsCount(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 10, 15, 30, 0, time.UTC)
	counts := limits.NewMemory()
	l := &ledger.Ledger{Store: ledger.Local{Counter: counts}, Limits: true}
	key := &apikey.Key{ID: "k", RateLimit: apikey.RateLimit{RequestsPerMinute: 2}}
	chain := []*catalog.Model{{Name: "a/m", Points: 1}}
	for i := range 2 {
		if r, err := l.Admit(ctx, key, chain, billing.Estimate{}, now); err != nil || r != nil {
			t.Fatalf("request %d: %v, %v; want admitted with no reservation", i+1, r, err)
		}
	}
	_, err := l.Admit(ctx, key, chain, billing.Estimate{}, now)
	var ex *limits.Exceeded
	if fault.KindOf(err) != fault.RateLimited || !errors.As(err, &ex) || ex.Period != limits.Minute {
		t.Errorf("third request: %v, want the minute's refusal", err)
	}
	if err := l.Settle(ctx, nil, nil, nil); err != nil {
		t.Errorf("settling nothing: %v", err)
	}
}
