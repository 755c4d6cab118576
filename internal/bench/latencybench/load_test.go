package latencybench

import (
	"sync"
	"testing"
)

// Concurrent workers sharing a ring take every key equally often, so no key carries more than
// its share of a run.
func TestKeyRingSharesEvenly(t *testing.T) {
	r := NewKeyRing([]string{"a", "b", "c"})
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 300 {
				k := r.Next()
				mu.Lock()
				seen[k]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, k := range []string{"Bearer a", "Bearer b", "Bearer c"} {
		if seen[k] != 800 {
			t.Errorf("%s taken %d times, want 800 (all: %v)", k, seen[k], seen)
		}
	}
	if r.Taken() != 2400 {
		t.Errorf("Taken %d, want 2400", r.Taken())
	}
}
