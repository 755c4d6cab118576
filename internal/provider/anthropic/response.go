package anthropic

import (
	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

// translateResponse turns a Messages API answer into a chat.completion.
func translateResponse(raw []byte, model string, created int64) (*provider.Response, error) {
	if !gjson.ValidBytes(raw) {
		return nil, malformed("response")
	}
	msg := gjson.ParseBytes(raw)
	var (
		text  translate.Text
		calls []translate.ToolCall
	)
	for _, block := range msg.Get("content").Array() {
		switch block.Get("type").String() {
		case "text":
			text.Add(block.Get("text"))
		case "tool_use":
			calls = append(calls, translate.ToolCall{
				ID:   block.Get("id").String(),
				Name: block.Get("name").String(),
				Args: translate.Arguments(block.Get("input")),
			})
		}
	}
	u := usage(msg.Get("usage"))
	if m := msg.Get("model").String(); m != "" {
		model = m
	}
	body := translate.AppendCompletion(make([]byte, 0, len(raw)+256), msg.Get("id").String(), model, created, text.Token(), calls, finishReason(msg.Get("stop_reason").String()), u)
	return &provider.Response{Body: body, Usage: u}, nil
}

// usage counts cached prompt tokens as prompt tokens: Anthropic reports them apart, OpenAI's
// prompt_tokens includes them.
func usage(u gjson.Result) provider.Usage {
	return provider.Usage{
		PromptTokens:     int(u.Get("input_tokens").Int() + u.Get("cache_creation_input_tokens").Int() + u.Get("cache_read_input_tokens").Int()),
		CompletionTokens: int(u.Get("output_tokens").Int()),
	}
}

func finishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence, pause_turn
}

func malformed(what string) *provider.Error { return provider.Malformed("anthropic", what) }
