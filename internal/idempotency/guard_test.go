package idempotency_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/idempotency"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newGuard(t *testing.T) (*idempotency.Guard, *clock) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := &clock{now: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}
	return &idempotency.Guard{Store: s, Now: c.Now, PollMin: time.Millisecond, PollMax: 5 * time.Millisecond}, c
}

func TestGuardReplaysUntilTTL(t *testing.T) {
	g, c := newGuard(t)
	ctx := context.Background()
	tk, rec, err := g.Begin(ctx, "key_1", "k", "h")
	if err != nil || tk == nil || rec != nil {
		t.Fatalf("first Begin = %v, %v, %v", tk, rec, err)
	}
	if err := tk.Complete(ctx, 200, "application/json", []byte(`{"id":"a"}`)); err != nil {
		t.Fatal(err)
	}
	c.Add(idempotency.TTL - time.Second)
	if tk, rec, err := g.Begin(ctx, "key_1", "k", "h"); err != nil || tk != nil || string(rec.Body) != `{"id":"a"}` {
		t.Fatalf("repeat within the TTL = %v, %+v, %v; want the record", tk, rec, err)
	}
	c.Add(time.Second)
	if tk, rec, err := g.Begin(ctx, "key_1", "k", "h"); err != nil || tk == nil || rec != nil {
		t.Fatalf("repeat after the TTL = %v, %+v, %v; want a fresh claim", tk, rec, err)
	}
}

func TestGuardMismatch(t *testing.T) {
	g, _ := newGuard(t)
	ctx := context.Background()
	tk, _, err := g.Begin(ctx, "key_1", "k", "h1")
	if err != nil {
		t.Fatal(err)
	}
	var mm *idempotency.MismatchError
	if _, _, err := g.Begin(ctx, "key_1", "k", "h2"); !errors.As(err, &mm) {
		t.Errorf("different request while in progress: err = %v, want MismatchError", err)
	}
	_ = tk.Complete(ctx, 200, "application/json", []byte("{}"))
	if _, _, err := g.Begin(ctx, "key_1", "k", "h2"); !errors.As(err, &mm) {
		t.Errorf("different request after completion: err = %v, want MismatchError", err)
	}
	if _, _, err := g.Begin(ctx, "key_2", "k", "h2"); err != nil {
		t.Errorf("same key under another API key: %v", err)
	}
}

func TestGuardWaiterGetsTheFirstResult(t *testing.T) {
	g, _ := newGuard(t)
	ctx := context.Background()
	tk, _, err := g.Begin(ctx, "key_1", "k", "h")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *idempotency.Record)
	go func() {
		_, rec, _ := g.Begin(ctx, "key_1", "k", "h")
		got <- rec
	}()
	time.Sleep(20 * time.Millisecond)
	_ = tk.Complete(ctx, 200, "application/json", []byte("first"))
	if rec := <-got; rec == nil || string(rec.Body) != "first" {
		t.Fatalf("waiter got %+v", rec)
	}
}

func TestGuardWaiterAfterReleaseRunsItself(t *testing.T) {
	g, _ := newGuard(t)
	ctx := context.Background()
	tk, _, _ := g.Begin(ctx, "key_1", "k", "h")
	got := make(chan *idempotency.Ticket)
	go func() {
		t2, _, _ := g.Begin(ctx, "key_1", "k", "h")
		got <- t2
	}()
	time.Sleep(20 * time.Millisecond)
	_ = tk.Release(ctx)
	if t2 := <-got; t2 == nil {
		t.Fatal("after a release the waiter should own the key")
	}
}

func TestGuardWaiterGivesUpWithItsContext(t *testing.T) {
	g, _ := newGuard(t)
	if _, _, err := g.Begin(context.Background(), "key_1", "k", "h"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	var ip *idempotency.InProgressError
	if _, _, err := g.Begin(ctx, "key_1", "k", "h"); !errors.As(err, &ip) {
		t.Fatalf("err = %v, want InProgressError", err)
	}
}

// A waiter with a deadline answers while it still can: it returns before its context ends, with
// the 409 and Retry-After the surfaces render.
func TestGuardWaiterAnswersBeforeItsDeadline(t *testing.T) {
	g, _ := newGuard(t)
	// A margin wide enough for a busy machine's scheduling delays: the waiter must stop polling
	// while it still has time, whatever the machine.
	g.AnswerMargin = 500 * time.Millisecond
	if _, _, err := g.Begin(context.Background(), "key_1", "k", "h"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, _, err := g.Begin(ctx, "key_1", "k", "h")
	var ip *idempotency.InProgressError
	if !errors.As(err, &ip) {
		t.Fatalf("err = %v, want InProgressError", err)
	}
	if ctx.Err() != nil {
		t.Errorf("the waiter returned after its deadline (%v); its answer could not be sent", ctx.Err())
	}
	if f := ip.Fault(); f.K != fault.Conflict || f.RetryAfter <= 0 {
		t.Errorf("fault = %v, Retry-After %v; want a conflict (409) with Retry-After", f.K, f.RetryAfter)
	}
}

// A waiter with less time left than the margin does not poll at all.
func TestGuardWaiterWithNoTimeLeftAnswersAtOnce(t *testing.T) {
	g, _ := newGuard(t)
	if _, _, err := g.Begin(context.Background(), "key_1", "k", "h"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond) // under the 1 s default margin
	defer cancel()
	var ip *idempotency.InProgressError
	if _, _, err := g.Begin(ctx, "key_1", "k", "h"); !errors.As(err, &ip) || ctx.Err() != nil {
		t.Fatalf("err = %v (ctx %v), want InProgressError before the deadline", err, ctx.Err())
	}
}

func TestCheckKey(t *testing.T) {
	for _, k := range []string{"a", "order-42", strings.Repeat("x", idempotency.MaxKeyLen)} {
		if err := idempotency.CheckKey(k); err != nil {
			t.Errorf("CheckKey(%q) = %v", k, err)
		}
	}
	for _, k := range []string{"", "has space", "tab\t", "é", strings.Repeat("x", idempotency.MaxKeyLen+1)} {
		if err := idempotency.CheckKey(k); err == nil {
			t.Errorf("CheckKey(%q) accepted", k)
		}
	}
}
