package openai

import (
	"context"
	"io"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

var responsesFormat = translate.SSEFormat{Provider: "openai", Event: "responses event", Terminator: "response.completed"}

func responsesUsage(u gjson.Result) provider.Usage {
	return provider.Usage{PromptTokens: int(u.Get("input_tokens").Int()), CompletionTokens: int(u.Get("output_tokens").Int())}
}

// nativeAnswer is a Response object passed through, with its usage read for billing.
func nativeAnswer(body []byte) (*provider.Response, error) {
	if !gjson.ValidBytes(body) || gjson.GetBytes(body, "object").String() != "response" {
		return nil, &provider.Error{Reason: chain.ServerError, Message: "provider returned a malformed response object"}
	}
	return &provider.Response{Body: body, Usage: responsesUsage(gjson.GetBytes(body, "usage")), Native: true}, nil
}

// contentEvents are the Responses events that carry the answer's first content: text, a tool
// call's start or arguments, a reasoning summary.
var contentEvents = map[string]string{
	"response.output_text.delta": "delta", "response.function_call_arguments.delta": "delta",
	"response.custom_tool_call_input.delta": "delta", "response.reasoning_summary_text.delta": "delta",
	"response.refusal.delta": "delta",
}

// nativeStream passes a Responses event stream through, each event as it came, marking the first
// content, the usage and the end; response.failed and error events are interruptions, classified
// like a chat stream's error.
func nativeStream(ctx context.Context, body io.ReadCloser) provider.Stream {
	return translate.NewSSEStream(ctx, body, responsesFormat, func(data []byte, q *translate.Queue) error {
		if !gjson.ValidBytes(data) {
			return &provider.Error{Reason: chain.ServerError, Message: "provider sent a malformed responses event"}
		}
		ev := gjson.ParseBytes(data)
		c := provider.Chunk{Data: data, Native: true}
		switch typ := ev.Get("type").String(); typ {
		case "response.output_item.added":
			t := ev.Get("item.type").String()
			c.Content = t == "function_call" || t == "custom_tool_call"
		case "response.completed", "response.incomplete":
			u := responsesUsage(ev.Get("response.usage"))
			c.Usage, c.Finish = &u, true
			q.Push(c)
			q.End()
			return nil
		case "response.failed", "error":
			obj := ev.Get("response.error")
			if typ == "error" {
				obj = ev
			}
			e := streamError(obj)
			if q.ContentSent() {
				e.Reason = ""
			}
			return e
		default:
			if f, ok := contentEvents[typ]; ok {
				c.Content = ev.Get(f).Str != ""
			}
		}
		q.Push(c)
		return nil
	})
}
