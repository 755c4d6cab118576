package ledger_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
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

// gatedUsers is a user store whose reads wait at a gate and are counted.
type gatedUsers struct {
	*boltstore.Store
	started chan struct{} // one value per read begun
	gate    chan struct{} // closed: reads go on
	reads   atomic.Int32
}

func (g *gatedUsers) User(ctx context.Context, id string) (*billing.User, error) {
	g.reads.Add(1)
	g.started <- struct{}{}
	<-g.gate
	return g.Store.User(ctx, id)
}

// A prefetched user is read once: Admit waits for the read the prefetch began instead of making
// its own (a cold function's user read runs beside its breaker check, not after it).
func TestAdmitWaitsForThePrefetchedRead(t *testing.T) {
	ctx := context.Background()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "gateway.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	if err := s.CreateUser(ctx, billing.NewUser("u", billing.DefaultUser, now)); err != nil {
		t.Fatal(err)
	}
	users := &gatedUsers{Store: s, started: make(chan struct{}, 4), gate: make(chan struct{})}
	counts := limits.NewMemory()
	l := &ledger.Ledger{Store: ledger.Local{Counter: counts, Users: users, Receipts: s}, Limits: true, Biller: &billing.Biller{Store: users}}
	key := &apikey.Key{ID: "k", UserID: "u"}

	l.Prefetch(ctx, key)
	<-users.started // the prefetch's read is under way (and held)
	l.Prefetch(ctx, key)
	admitted := make(chan error, 1)
	go func() {
		_, err := l.Admit(ctx, key, []*catalog.Model{{Name: "a/m", Points: 1}}, billing.Estimate{}, now)
		admitted <- err
	}()
	close(users.gate)
	if err := <-admitted; err != nil {
		t.Fatal(err)
	}
	if n := users.reads.Load(); n != 1 {
		t.Errorf("the user was read %d times, want once (the prefetch's read, shared)", n)
	}
}
