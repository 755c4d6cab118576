package gemini

import (
	"context"
	"io"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

var streamFormat = translate.SSEFormat{Provider: "gemini", Event: "stream frame", Terminator: "a finishReason"}

// translator reads streamGenerateContent?alt=sse: every data frame is a whole
// GenerateContentResponse carrying the next parts; the frame with a finishReason is the last.
type translator struct {
	a       *adapter
	chunks  translate.Chunks
	model   string
	created int64

	started bool // the role chunk has been queued
	tools   int  // tool calls so far
}

func (a *adapter) newStream(ctx context.Context, body io.ReadCloser, model string, created int64) provider.Stream {
	t := &translator{a: a, model: model, created: created}
	return translate.NewSSEStream(ctx, body, streamFormat, t.frame)
}

// frame queues the chunks one frame produces.
func (t *translator) frame(data []byte, q *translate.Queue) error {
	if !gjson.ValidBytes(data) {
		return malformed("stream frame")
	}
	r := gjson.ParseBytes(data)
	if e := r.Get("error"); e.Exists() {
		return t.a.apiError(0, e)
	}
	cand := r.Get("candidates.0")
	if !cand.Exists() {
		if br := r.Get("promptFeedback.blockReason"); br.Exists() {
			return contentFiltered(br.String())
		}
		return nil
	}
	if !t.started {
		t.started = true
		t.chunks = translate.NewChunks(responseID(r), modelOf(r, t.model), t.created)
		q.Push(t.chunks.Role())
	}
	for _, p := range cand.Get("content.parts").Array() {
		if s := p.Get("text"); s.Type == gjson.String && s.Str != "" && !p.Get("thought").Bool() {
			q.Push(t.chunks.Text([]byte(s.Raw)))
		} else if fc := p.Get("functionCall"); fc.Exists() {
			// Gemini sends a call whole, so one delta carries its id, name and arguments.
			q.Push(t.chunks.ToolCall(t.tools, callID(fc), fc.Get("name").String(), translate.Arguments(fc.Get("args"))))
			t.tools++
		}
	}
	if fr := cand.Get("finishReason"); fr.Exists() {
		q.Push(t.chunks.Finish(finishReason(fr.String(), t.tools > 0)))
		if u := r.Get("usageMetadata"); u.Exists() {
			q.Push(t.chunks.Usage(usage(u)))
		}
		q.End() // the stream ends here: nothing after it is waited for
	}
	return nil
}
