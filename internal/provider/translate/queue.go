package translate

import "github.com/secureai-gateway/gateway/internal/provider"

// Queue holds the chunks one upstream event yields (an event may yield several, or none) until a
// stream's Recv hands them out one at a time.
type Queue struct {
	chunks  []provider.Chunk
	ended   bool // nothing follows the queued chunks
	content bool // a content chunk has been handed out
}

// Push queues chunks behind those already queued.
func (q *Queue) Push(cs ...provider.Chunk) { q.chunks = append(q.chunks, cs...) }

// End marks the answer complete: once the queue is drained the stream is over, and nothing more
// is waited for from the provider.
func (q *Queue) End() { q.ended = true }

// Ended reports whether End was called.
func (q *Queue) Ended() bool { return q.ended }

// Len is how many chunks wait to be popped.
func (q *Queue) Len() int { return len(q.chunks) }

// ContentSent reports whether a content chunk has been handed out: from then on the stream is
// locked to its model, so an error no longer fails over.
func (q *Queue) ContentSent() bool { return q.content }

// Pop hands out the next queued chunk; ok is false when none is queued.
func (q *Queue) Pop() (c provider.Chunk, ok bool) {
	if len(q.chunks) == 0 {
		return provider.Chunk{}, false
	}
	c, q.chunks = q.chunks[0], q.chunks[1:]
	q.content = q.content || c.Content
	return c, true
}
