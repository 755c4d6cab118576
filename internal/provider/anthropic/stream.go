package anthropic

import (
	"cmp"
	"context"
	"io"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

var streamFormat = translate.SSEFormat{Provider: "anthropic", Event: "stream event", Terminator: "message_stop"}

// translator turns Anthropic's event sequence (message_start, content_block_start/delta/stop,
// ping, message_delta, message_stop, error) into chat.completion.chunk objects, one event at a time.
type translator struct {
	a       *adapter
	chunks  translate.Chunks
	model   string
	created int64

	tools map[int64]int // content block index → OpenAI tool call index
	usage provider.Usage
}

func (a *adapter) newStream(ctx context.Context, body io.ReadCloser, model string, created int64) provider.Stream {
	t := &translator{a: a, model: model, created: created, chunks: translate.NewChunks("", model, created)}
	return translate.NewSSEStream(ctx, body, streamFormat, t.event)
}

// event queues the chunks one event produces.
func (t *translator) event(data []byte, q *translate.Queue) error {
	if !gjson.ValidBytes(data) {
		return malformed("stream event")
	}
	ev := gjson.ParseBytes(data)
	switch ev.Get("type").String() {
	case "message_start":
		m := ev.Get("message")
		if id := m.Get("id").String(); id != "" || m.Get("model").Exists() {
			t.chunks = translate.NewChunks(id, cmp.Or(m.Get("model").String(), t.model), t.created)
		}
		t.usage = usage(m.Get("usage"))
		q.Push(t.chunks.Role())
	case "content_block_start":
		// Only a tool_use block says something at its start: the call's id and name.
		if cb := ev.Get("content_block"); cb.Get("type").String() == "tool_use" {
			if t.tools == nil {
				t.tools = make(map[int64]int)
			}
			i := len(t.tools)
			t.tools[ev.Get("index").Int()] = i
			q.Push(t.chunks.ToolCall(i, cb.Get("id").String(), cb.Get("name").String(), []byte(`""`)))
		}
	case "content_block_delta":
		d := ev.Get("delta")
		switch d.Get("type").String() {
		case "text_delta":
			if s := d.Get("text"); s.Str != "" {
				q.Push(t.chunks.Text([]byte(s.Raw)))
			}
		case "input_json_delta":
			i, ok := t.tools[ev.Get("index").Int()]
			if p := d.Get("partial_json"); ok && p.Str != "" {
				q.Push(t.chunks.ToolArgs(i, []byte(p.Raw)))
			}
		}
	case "message_delta":
		// The last event with data: the stop reason and the final output token count. Nothing
		// after it is waited for, so a missing message_stop cannot hold a finished answer.
		if u := ev.Get("usage"); u.Exists() {
			t.usage.CompletionTokens = int(u.Get("output_tokens").Int())
			if u.Get("input_tokens").Exists() {
				t.usage.PromptTokens = usage(u).PromptTokens
			}
		}
		q.Push(t.chunks.Finish(finishReason(ev.Get("delta.stop_reason").String())), t.chunks.Usage(t.usage))
		q.End()
	case "message_stop":
		q.End()
	case "error":
		e := ev.Get("error")
		perr := t.a.apiError(0, e.Get("type").String(), e.Get("message").String())
		if q.ContentSent() {
			// Past the first token the model is locked in: the error ends the stream, it does
			// not fail over.
			perr.Reason = ""
		}
		return perr
	}
	return nil
}
