package anthropic

import (
	"context"
	"io"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

// nativeAnswer is a Messages answer passed through: the message as Anthropic wrote it, with its
// usage read for billing.
func nativeAnswer(raw []byte) (*provider.Response, error) {
	if !gjson.ValidBytes(raw) {
		return nil, malformed("response")
	}
	return &provider.Response{Body: raw, Usage: usage(gjson.GetBytes(raw, "usage")), Native: true}, nil
}

// stopEvent ends a passed-through stream whose message_delta came: nothing after it is waited
// for (as in the translated stream), so the caller gets the terminator at once.
var stopEvent = []byte(`{"type":"message_stop"}`)

// nativeStream passes Anthropic's events through, each as it came, marking what the chain needs:
// the first content (text, a tool call or thinking: the model is producing its answer), the
// usage and the end. An error event is an interruption, classified as the translated stream's.
func (a *adapter) nativeStream(ctx context.Context, body io.ReadCloser) provider.Stream {
	var u provider.Usage
	return translate.NewSSEStream(ctx, body, streamFormat, func(data []byte, q *translate.Queue) error {
		if !gjson.ValidBytes(data) {
			return malformed("stream event")
		}
		ev := gjson.ParseBytes(data)
		c := provider.Chunk{Data: data, Native: true}
		switch ev.Get("type").String() {
		case "message_start":
			u = usage(ev.Get("message.usage"))
		case "content_block_start":
			c.Content = ev.Get("content_block.type").String() == "tool_use"
		case "content_block_delta":
			d := ev.Get("delta")
			for _, f := range [...]string{"text", "partial_json", "thinking"} {
				c.Content = c.Content || d.Get(f).Str != ""
			}
		case "message_delta":
			if m := ev.Get("usage"); m.Exists() {
				u.CompletionTokens = int(m.Get("output_tokens").Int())
				if m.Get("input_tokens").Exists() {
					u.PromptTokens = usage(m).PromptTokens
				}
			}
			usage := u
			c.Usage, c.Finish = &usage, true
			q.Push(c, provider.Chunk{Data: stopEvent, Native: true})
			q.End()
			return nil
		case "message_stop":
			q.End()
		case "error":
			e := ev.Get("error")
			perr := a.apiError(0, e.Get("type").String(), e.Get("message").String())
			if q.ContentSent() {
				perr.Reason = ""
			}
			return perr
		}
		q.Push(c)
		return nil
	})
}
