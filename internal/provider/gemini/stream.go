package gemini

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

// stream translates streamGenerateContent?alt=sse: every data frame is a whole
// GenerateContentResponse carrying the next parts; the frame with a finishReason is the last.
type stream struct {
	ctx     context.Context
	body    io.ReadCloser
	events  *sse.Reader
	a       *adapter
	chunks  oaichunk.Chunks
	model   string
	created int64

	started bool // the role chunk has been queued
	tools   int  // tool calls so far
	queue   []provider.Chunk
	done    bool // nothing follows the queued chunks

	closeOnce sync.Once
	closeErr  error
}

func (a *adapter) newStream(ctx context.Context, body io.ReadCloser, model string, created int64) *stream {
	return &stream{ctx: ctx, body: body, events: sse.NewReader(body), a: a, model: model, created: created}
}

func (s *stream) Recv() (provider.Chunk, error) {
	for {
		if len(s.queue) > 0 {
			c := s.queue[0]
			s.queue = s.queue[1:]
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

// handle queues the chunks one frame produces.
func (s *stream) handle(data []byte) error {
	if !gjson.ValidBytes(data) {
		return malformed("stream frame")
	}
	r := gjson.ParseBytes(data)
	if e := r.Get("error"); e.Exists() {
		return s.a.apiError(0, e)
	}
	cand := r.Get("candidates.0")
	if !cand.Exists() {
		if br := r.Get("promptFeedback.blockReason"); br.Exists() {
			return contentFiltered(br.String())
		}
		return nil
	}
	if !s.started {
		s.started = true
		s.chunks = oaichunk.NewChunks(responseID(r), modelOf(r, s.model), s.created)
		s.queue = append(s.queue, s.chunks.Role())
	}
	for _, p := range cand.Get("content.parts").Array() {
		if t := p.Get("text"); t.Type == gjson.String && t.Str != "" && !p.Get("thought").Bool() {
			s.queue = append(s.queue, s.chunks.Text([]byte(t.Raw)))
		} else if fc := p.Get("functionCall"); fc.Exists() {
			// Gemini sends a call whole, so one delta carries its id, name and arguments.
			s.queue = append(s.queue, s.chunks.ToolCall(s.tools, callID(fc), fc.Get("name").String(), oaichunk.Arguments(fc.Get("args"))))
			s.tools++
		}
	}
	if fr := cand.Get("finishReason"); fr.Exists() {
		s.queue = append(s.queue, s.chunks.Finish(finishReason(fr.String(), s.tools > 0)))
		if u := r.Get("usageMetadata"); u.Exists() {
			s.queue = append(s.queue, s.chunks.Usage(usage(u)))
		}
		s.done = true // the stream ends here: nothing after it is waited for
	}
	return nil
}

func (s *stream) readError(err error) error {
	if ctxErr := s.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	switch {
	case err == io.EOF:
		return &provider.Error{Reason: chain.ConnectionError, Message: "provider gemini ended the stream before a finishReason", Err: io.ErrUnexpectedEOF}
	case errors.Is(err, sse.ErrEventTooLarge):
		return malformed("stream frame")
	}
	return provider.TransportError(err)
}

// Close stops the HTTP body; a Recv blocked on it returns at once.
func (s *stream) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.body.Close() })
	return s.closeErr
}
