package chain

import (
	"math/rand/v2"
	"sync"
)

// Picker orders the deployments of a model that carry weights (SPEC 3.5a): the first is drawn in
// proportion to the weights, each next among those left, so a model's requests spread over its
// deployments by weight while each request can still fail over to the others. Safe for
// concurrent use; a nil Picker draws from the process-wide random source.
type Picker struct {
	mu  sync.Mutex
	rng *rand.Rand
}

// NewPicker returns a Picker whose draws repeat for the same seed, so a test of the spread is
// deterministic.
func NewPicker(seed uint64) *Picker {
	return &Picker{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Order returns the indices of weights (each positive) in the order to try them.
func (p *Picker) Order(weights []int) []int {
	order := make([]int, len(weights))
	total := 0
	for i, w := range weights {
		order[i] = i
		total += w
	}
	if p != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
	}
	for k := range order[:max(len(order)-1, 0)] {
		// Draw one of order[k:] by weight and move it to place k.
		n := p.draw(total)
		j := k
		for ; n >= weights[order[j]]; j++ {
			n -= weights[order[j]]
		}
		order[k], order[j] = order[j], order[k]
		total -= weights[order[k]]
	}
	return order
}

// draw returns a number in [0, n).
func (p *Picker) draw(n int) int {
	if p == nil {
		return rand.N(n)
	}
	return p.rng.IntN(n)
}
