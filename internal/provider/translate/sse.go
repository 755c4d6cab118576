package translate

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/sse"
)

// SSEFormat says how one provider's Server-Sent Events stream reads.
type SSEFormat struct {
	Provider   string // the name errors give, e.g. "anthropic"
	Event      string // what one event is called in errors, e.g. "stream event"
	Terminator string // what ends a complete answer, e.g. "message_stop"
}

// EventFunc translates one event's data: it pushes the chunks the event yields onto q and ends q
// when the answer is complete. An error ends the stream.
type EventFunc func(data []byte, q *Queue) error

// SSEStream is the provider.Stream of the adapters whose provider streams Server-Sent Events in
// its own format: it reads events, hands each to the adapter's EventFunc, and gives out the OpenAI
// chunks that yields. Ending, cutting, cancelling and closing work alike for all.
type SSEStream struct {
	ctx    context.Context
	body   io.ReadCloser
	events *sse.Reader
	format SSEFormat
	event  EventFunc
	queue  Queue

	closeOnce sync.Once
	closeErr  error
}

// NewSSEStream reads body, which ctx governs, as a stream of format translated by event.
func NewSSEStream(ctx context.Context, body io.ReadCloser, format SSEFormat, event EventFunc) *SSEStream {
	return &SSEStream{ctx: ctx, body: body, events: sse.NewReader(body), format: format, event: event}
}

// Buffered implements provider.Buffered. Only chunks already translated count: a buffered event
// may yield none (an Anthropic ping, a Gemini frame without text), and holding a flush for it
// would hold the caller's tokens until the provider's next real event.
func (s *SSEStream) Buffered() bool { return s.queue.Len() > 0 }

// Recv implements provider.Stream.
func (s *SSEStream) Recv() (provider.Chunk, error) {
	for {
		if c, ok := s.queue.Pop(); ok {
			return c, nil
		}
		if s.queue.Ended() {
			return provider.Chunk{}, io.EOF
		}
		ev, err := s.events.Next()
		if err != nil {
			return provider.Chunk{}, s.readError(err)
		}
		if err := s.event(ev.Data, &s.queue); err != nil {
			return provider.Chunk{}, err
		}
	}
}

// readError classifies why no further event came. The caller leaving wins over what the cut
// connection looks like, because the chain engine tells those cases apart by the context.
func (s *SSEStream) readError(err error) error {
	if ctxErr := s.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	switch {
	case err == io.EOF:
		return &provider.Error{Reason: chain.ConnectionError, Message: "provider " + s.format.Provider + " ended the stream before " + s.format.Terminator, Err: io.ErrUnexpectedEOF}
	case errors.Is(err, sse.ErrEventTooLarge):
		return provider.Malformed(s.format.Provider, s.format.Event)
	}
	return provider.TransportError(err)
}

// Close stops the HTTP body; a Recv blocked on it returns at once.
func (s *SSEStream) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.body.Close() })
	return s.closeErr
}
