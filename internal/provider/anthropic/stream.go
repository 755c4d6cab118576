package anthropic

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/oaichunk"
	"github.com/secureai-gateway/gateway/internal/sse"
)

// stream translates Anthropic's event sequence (message_start, content_block_start/delta/stop,
// ping, message_delta, message_stop, error) into chat.completion.chunk objects, one event at a time.
type stream struct {
	ctx     context.Context
	body    io.ReadCloser
	events  *sse.Reader
	a       *adapter
	chunks  oaichunk.Chunks
	model   string
	created int64

	tools   map[int64]int // content block index → OpenAI tool call index
	usage   provider.Usage
	queue   []provider.Chunk
	content bool // a content token has been returned
	done    bool // nothing follows the queued chunks

	closeOnce sync.Once
	closeErr  error
}

func (a *adapter) newStream(ctx context.Context, body io.ReadCloser, model string, created int64) *stream {
	return &stream{ctx: ctx, body: body, events: sse.NewReader(body), a: a, model: model, created: created, chunks: oaichunk.NewChunks("", model, created)}
}

func (s *stream) Recv() (provider.Chunk, error) {
	for {
		if len(s.queue) > 0 {
			c := s.queue[0]
			s.queue = s.queue[1:]
			s.content = s.content || c.Content
			return c, nil
		}
		if s.done {
			return provider.Chunk{}, io.EOF
		}
		ev, err := s.events.Next()
		if err != nil {
			return provider.Chunk{}, s.readError(err)
		}
		if err := s.handle(ev.Data); err != nil {
			return provider.Chunk{}, err
		}
	}
}

// handle queues the chunks one event produces.
func (s *stream) handle(data []byte) error {
	if !gjson.ValidBytes(data) {
		return malformed("stream event")
	}
	ev := gjson.ParseBytes(data)
	switch ev.Get("type").String() {
	case "message_start":
		m := ev.Get("message")
		if id := m.Get("id").String(); id != "" || m.Get("model").Exists() {
			s.chunks = oaichunk.NewChunks(id, orDefault(m.Get("model").String(), s.model), s.created)
		}
		s.usage = usage(m.Get("usage"))
		s.queue = append(s.queue, s.chunks.Role())
	case "content_block_start":
		// Only a tool_use block says something at its start: the call's id and name.
		if cb := ev.Get("content_block"); cb.Get("type").String() == "tool_use" {
			if s.tools == nil {
				s.tools = make(map[int64]int)
			}
			i := len(s.tools)
			s.tools[ev.Get("index").Int()] = i
			s.queue = append(s.queue, s.chunks.ToolCall(i, cb.Get("id").String(), cb.Get("name").String(), []byte(`""`)))
		}
	case "content_block_delta":
		d := ev.Get("delta")
		switch d.Get("type").String() {
		case "text_delta":
			if t := d.Get("text"); t.Str != "" {
				s.queue = append(s.queue, s.chunks.Text([]byte(t.Raw)))
			}
		case "input_json_delta":
			i, ok := s.tools[ev.Get("index").Int()]
			if p := d.Get("partial_json"); ok && p.Str != "" {
				s.queue = append(s.queue, s.chunks.ToolArgs(i, []byte(p.Raw)))
			}
		}
	case "message_delta":
		// The last event with data: the stop reason and the final output token count. Nothing
		// after it is waited for, so a missing message_stop cannot hold a finished answer.
		if u := ev.Get("usage"); u.Exists() {
			s.usage.CompletionTokens = int(u.Get("output_tokens").Int())
			if u.Get("input_tokens").Exists() {
				s.usage.PromptTokens = usage(u).PromptTokens
			}
		}
		s.queue = append(s.queue, s.chunks.Finish(finishReason(ev.Get("delta.stop_reason").String())), s.chunks.Usage(s.usage))
		s.done = true
	case "message_stop":
		s.done = true
	case "error":
		e := ev.Get("error")
		perr := s.a.apiError(0, e.Get("type").String(), e.Get("message").String())
		if s.content {
			// Past the first token the model is locked in: the error ends the stream, it does
			// not fail over.
			perr.Reason = ""
		}
		return perr
	}
	return nil
}

func (s *stream) readError(err error) error {
	if ctxErr := s.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	switch {
	case err == io.EOF:
		return &provider.Error{Reason: chain.ConnectionError, Message: "provider anthropic ended the stream before message_stop", Err: io.ErrUnexpectedEOF}
	case errors.Is(err, sse.ErrEventTooLarge):
		return malformed("stream event")
	}
	return provider.TransportError(err)
}

// Close stops the HTTP body; a Recv blocked on it returns at once.
func (s *stream) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.body.Close() })
	return s.closeErr
}
