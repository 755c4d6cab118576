package bedrock

import (
	"strconv"

	"github.com/secureai-gateway/gateway/internal/provider"
)

// This file builds the OpenAI shapes the adapter answers in. Bodies are appended byte by byte:
// text coming from the provider is already a JSON string token and is copied as is, so nothing
// the gateway only passes through is decoded and re-encoded.

// chunks builds chat.completion.chunk objects for one stream; head is everything up to "choices".
type chunks struct{ head []byte }

func newChunks(id, model string, created int64) chunks {
	b := append([]byte(`{"id":`), appendString(nil, id)...)
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":`...)
	b = appendString(b, model)
	return chunks{head: append(b, `,"choices":`...)}
}

func (c chunks) choice(delta string, parts ...[]byte) []byte {
	b := make([]byte, 0, len(c.head)+96+len(delta))
	b = append(append(b, c.head...), `[{"index":0,"delta":`...)
	b = append(b, delta...)
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func (c chunks) role() provider.Chunk {
	return provider.Chunk{Data: append(c.choice(`{"role":"assistant","content":""}`), `,"finish_reason":null}]}`...)}
}

// text is a content delta; raw is a non-empty JSON string token.
func (c chunks) text(raw []byte) provider.Chunk {
	return provider.Chunk{Data: append(c.choice(`{"content":`, raw), `},"finish_reason":null}]}`...), Content: true}
}

// toolCall opens tool call index with its id and name; args is a JSON string token.
func (c chunks) toolCall(index int, id, name string, args []byte) provider.Chunk {
	b := c.choice(`{"tool_calls":[{"index":`)
	b = strconv.AppendInt(b, int64(index), 10)
	b = appendString(append(b, `,"id":`...), id)
	b = appendString(append(b, `,"type":"function","function":{"name":`...), name)
	b = append(append(b, `,"arguments":`...), args...)
	return provider.Chunk{Data: append(b, `}}]},"finish_reason":null}]}`...), Content: true}
}

// toolArgs continues tool call index's arguments; raw is a non-empty JSON string token.
func (c chunks) toolArgs(index int, raw []byte) provider.Chunk {
	b := c.choice(`{"tool_calls":[{"index":`)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(append(b, `,"function":{"arguments":`...), raw...)
	return provider.Chunk{Data: append(b, `}}]},"finish_reason":null}]}`...), Content: true}
}

func (c chunks) finish(reason string) provider.Chunk {
	b := append(c.choice(`{}`), `,"finish_reason":"`...)
	return provider.Chunk{Data: append(append(b, reason...), `"}]}`...), Finish: true}
}

func (c chunks) usage(u provider.Usage) provider.Chunk {
	b := make([]byte, 0, len(c.head)+96)
	b = appendUsage(append(append(b, c.head...), `[],"usage":`...), u)
	return provider.Chunk{Data: append(b, '}'), Usage: &u, UsageOnly: true}
}

// toolCall is a complete tool call of a non-streamed answer; args is a JSON string token.
type toolCall struct {
	id, name string
	args     []byte
}

// appendCompletion appends a chat.completion object. text is a JSON string token or nil.
func appendCompletion(b []byte, id, model string, created int64, text []byte, calls []toolCall, finish string, u provider.Usage) []byte {
	b = appendString(append(b, `{"id":`...), id)
	b = strconv.AppendInt(append(b, `,"object":"chat.completion","created":`...), created, 10)
	b = appendString(append(b, `,"model":`...), model)
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
			b = appendString(append(b, `{"id":`...), c.id)
			b = appendString(append(b, `,"type":"function","function":{"name":`...), c.name)
			b = append(append(append(b, `,"arguments":`...), c.args...), "}}"...)
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

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
