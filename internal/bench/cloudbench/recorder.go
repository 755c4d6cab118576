package cloudbench

import (
	"slices"
	"sync"
)

// recorder keeps timed spans from concurrent handlers.
type recorder struct {
	mu    sync.Mutex
	spans []Span
}

func (r *recorder) add(s Span) {
	r.mu.Lock()
	r.spans = append(r.spans, s)
	r.mu.Unlock()
}

// take returns what was recorded and forgets it.
func (r *recorder) take() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.spans)
	r.spans = r.spans[:0]
	return out
}
