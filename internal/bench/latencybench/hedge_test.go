package latencybench

import (
	"context"
	"io"
	"testing"
	"time"
)

// The hedging benchmark's three modes are requests the gateway serves, and it counts attempts as
// the upstream saw them (a small, fast run: the benchmark itself is not a test). The sequential
// mode's first-token timeout is far above the slow answer's 400 ms, so a busy machine's scheduling
// cannot turn a slow answer into a timeout (with 500 ms it did, under -race beside other builds).
func TestHedgeModesAreServed(t *testing.T) {
	c := HedgeConfig{Requests: 20, Concurrency: 4, Fast: time.Millisecond, Slow: 400 * time.Millisecond, SlowShare: 0.3,
		FirstTokenTimeout: 3 * time.Second, HedgeAfter: 100 * time.Millisecond}
	rows, err := RunHedge(context.Background(), c, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r.Failed != 0 || len(r.TTFT) != c.Requests {
			t.Errorf("%s: %d failed, %d measured", r.Mode, r.Failed, len(r.TTFT))
		}
	}
	if rows[0].Attempts != 1 || rows[1].Attempts != 1 {
		t.Errorf("attempts without failover %.2f, sequential %.2f; want 1 (nothing times out)", rows[0].Attempts, rows[1].Attempts)
	}
	if rows[2].Attempts <= 1 {
		t.Errorf("hedged: %.2f attempts per request; slow first tokens must have been hedged", rows[2].Attempts)
	}
}
