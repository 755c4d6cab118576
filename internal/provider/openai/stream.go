package openai

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"unsafe"

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
		c, failed := inspect(ev.Data) // valid until the next Recv, as provider.Chunk allows
		if failed {
			return provider.Chunk{}, streamError(gjson.GetBytes(ev.Data, "error"))
		}
		if c.Finish {
			s.finished = true
		}
		if c.Usage != nil && s.finished {
			s.complete = true
		}
		return c, nil
	}
}

// inspect reads what the gateway needs to know of a chunk without decoding it, in one pass over
// its fields (the first of a repeated name counts, as for a lookup): failed is an "error" member
// that is not null.
func inspect(data []byte) (c provider.Chunk, failed bool) {
	c.Data = data
	// The results alias data and are dropped before returning: no copy of the chunk is made.
	var choices, usage, errv gjson.Result
	gjson.Parse(unsafe.String(unsafe.SliceData(data), len(data))).ForEach(func(k, v gjson.Result) bool {
		switch {
		case k.Str == "choices" && !choices.Exists():
			choices = v
		case k.Str == "usage" && !usage.Exists():
			usage = v
		case k.Str == "error" && !errv.Exists():
			errv = v
		}
		return true
	})
	if errv.Exists() && errv.Type != gjson.Null {
		return c, true
	}
	n := 0
	choices.ForEach(func(_, ch gjson.Result) bool {
		n++
		var delta, finish gjson.Result
		ch.ForEach(func(k, v gjson.Result) bool {
			switch {
			case k.Str == "delta" && !delta.Exists():
				delta = v
			case k.Str == "finish_reason" && !finish.Exists():
				finish = v
			}
			return true
		})
		if finish.Type == gjson.String && finish.Str != "" {
			c.Finish = true
		}
		delta.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "content", "refusal":
				c.Content = c.Content || v.String() != ""
			case "tool_calls":
				c.Content = c.Content || len(v.Array()) > 0
			}
			return true
		})
		return true
	})
	if usage.IsObject() {
		c.Usage = &provider.Usage{PromptTokens: int(usage.Get("prompt_tokens").Int()), CompletionTokens: int(usage.Get("completion_tokens").Int())}
		c.UsageOnly = n == 0
	}
	return c, false
}

// Buffered implements provider.Buffered.
func (s *stream) Buffered() bool { return s.events.EventBuffered() }

// Close implements provider.Stream.
func (s *stream) Close() error {
	var err error
	s.closeOnce.Do(func() { err = s.body.Close() })
	return err
}
