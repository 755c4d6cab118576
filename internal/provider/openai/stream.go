package openai

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/sse"
	"github.com/tidwall/gjson"
)

var done = []byte("[DONE]")

type stream struct {
	body      io.ReadCloser
	events    *sse.Reader
	finished  bool // a finish_reason arrived
	complete  bool // nothing more is owed: [DONE], or usage after the finish
	closeOnce sync.Once
}

func newStream(body io.ReadCloser) *stream {
	return &stream{body: body, events: sse.NewReader(body)}
}

// Recv implements provider.Stream. The stream is complete at [DONE], or as soon as the usage
// chunk follows the finish, so a server that forgets [DONE] does not keep the caller waiting; an
// end of input before any finish_reason is an interruption, never a quiet success.
func (s *stream) Recv() (provider.Chunk, error) {
	for {
		if s.complete {
			return provider.Chunk{}, io.EOF
		}
		ev, err := s.events.Next()
		switch {
		case err != nil && s.finished:
			// Only the usage and the terminator were still owed; the answer itself is whole.
			s.complete = true
			continue
		case err == io.EOF:
			return provider.Chunk{}, &provider.Error{Reason: chain.ConnectionError, Message: "provider stream ended before the completion finished"}
		case errors.Is(err, sse.ErrEventTooLarge):
			return provider.Chunk{}, &provider.Error{Reason: chain.ServerError, Message: "provider sent an oversized stream event"}
		case err != nil:
			return provider.Chunk{}, provider.TransportError(err)
		}
		if bytes.Equal(ev.Data, done) {
			s.complete = true
			continue
		}
		if len(ev.Data) == 0 {
			continue
		}
		if !gjson.ValidBytes(ev.Data) {
			return provider.Chunk{}, &provider.Error{Reason: chain.ServerError, Message: "provider sent a malformed stream chunk"}
		}
		if e := gjson.GetBytes(ev.Data, "error"); e.Exists() && e.Type != gjson.Null {
			return provider.Chunk{}, streamError(e)
		}
		c := inspect(ev.Data) // valid until the next Recv, as provider.Chunk allows
		if c.Finish {
			s.finished = true
		}
		if c.Usage != nil && s.finished {
			s.complete = true
		}
		return c, nil
	}
}

// inspect reads what the gateway needs to know of a chunk without decoding it.
func inspect(data []byte) provider.Chunk {
	c := provider.Chunk{Data: data}
	choices := gjson.GetBytes(data, "choices")
	n := 0
	choices.ForEach(func(_, ch gjson.Result) bool {
		n++
		d := ch.Get("delta")
		if d.Get("content").String() != "" || d.Get("refusal").String() != "" || len(d.Get("tool_calls").Array()) > 0 {
			c.Content = true
		}
		if f := ch.Get("finish_reason"); f.Type == gjson.String && f.Str != "" {
			c.Finish = true
		}
		return true
	})
	if u := gjson.GetBytes(data, "usage"); u.IsObject() {
		c.Usage = &provider.Usage{PromptTokens: int(u.Get("prompt_tokens").Int()), CompletionTokens: int(u.Get("completion_tokens").Int())}
		c.UsageOnly = n == 0
	}
	return c
}

// Buffered implements provider.Buffered.
func (s *stream) Buffered() bool { return s.events.EventBuffered() }

// Close implements provider.Stream.
func (s *stream) Close() error {
	var err error
	s.closeOnce.Do(func() { err = s.body.Close() })
	return err
}
