package translate

import (
	"strconv"

	"github.com/secureai-gateway/gateway/internal/provider"
)

// ToolCall is a complete tool call of a non-streamed answer; Args is a JSON string token.
type ToolCall struct {
	ID, Name string
	Args     []byte
}

// AppendCompletion appends a chat.completion object. text is a JSON string token or nil.
func AppendCompletion(b []byte, id, model string, created int64, text []byte, calls []ToolCall, finish string, u provider.Usage) []byte {
	b = AppendString(append(b, `{"id":`...), id)
	b = strconv.AppendInt(append(b, `,"object":"chat.completion","created":`...), created, 10)
	b = AppendString(append(b, `,"model":`...), model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	switch {
	case text != nil:
		b = append(b, text...)
	case len(calls) > 0:
		b = append(b, "null"...) // OpenAI's shape for an answer made only of tool calls
	default:
		b = append(b, `""`...)
	}
	if len(calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(append(b, `{"id":`...), c.ID)
			b = AppendString(append(b, `,"type":"function","function":{"name":`...), c.Name)
			b = append(append(append(b, `,"arguments":`...), c.Args...), "}}"...)
		}
		b = append(b, ']')
	}
	b = append(append(append(b, `},"finish_reason":"`...), finish...), `"}],"usage":`...)
	return append(appendUsage(b, u), '}')
}

func appendUsage(b []byte, u provider.Usage) []byte {
	b = strconv.AppendInt(append(b, `{"prompt_tokens":`...), int64(u.PromptTokens), 10)
	b = strconv.AppendInt(append(b, `,"completion_tokens":`...), int64(u.CompletionTokens), 10)
	b = strconv.AppendInt(append(b, `,"total_tokens":`...), int64(u.PromptTokens+u.CompletionTokens), 10)
	return append(b, '}')
}
