package translate

import (
	"strconv"

	"github.com/secureai-gateway/gateway/internal/provider"
)

// Chunks builds the chat.completion.chunk objects of one stream; head is everything up to
// "choices", shared by every chunk of the stream.
type Chunks struct{ head []byte }

// NewChunks starts the chunks of the stream id, answered by model.
func NewChunks(id, model string, created int64) Chunks {
	b := append([]byte(`{"id":`), AppendString(nil, id)...)
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":`...)
	b = AppendString(b, model)
	return Chunks{head: append(b, `,"choices":`...)}
}

func (c Chunks) choice(delta string, parts ...[]byte) []byte {
	b := make([]byte, 0, len(c.head)+96+len(delta))
	b = append(append(b, c.head...), `[{"index":0,"delta":`...)
	b = append(b, delta...)
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// Role is the opening chunk that names the assistant role.
func (c Chunks) Role() provider.Chunk {
	return provider.Chunk{Data: append(c.choice(`{"role":"assistant","content":""}`), `,"finish_reason":null}]}`...)}
}

// Text is a content delta; raw is a non-empty JSON string token.
func (c Chunks) Text(raw []byte) provider.Chunk {
	return provider.Chunk{Data: append(c.choice(`{"content":`, raw), `},"finish_reason":null}]}`...), Content: true}
}

// ToolCall opens tool call index with its id and name; args is a JSON string token.
func (c Chunks) ToolCall(index int, id, name string, args []byte) provider.Chunk {
	b := c.choice(`{"tool_calls":[{"index":`)
	b = strconv.AppendInt(b, int64(index), 10)
	b = AppendString(append(b, `,"id":`...), id)
	b = AppendString(append(b, `,"type":"function","function":{"name":`...), name)
	b = append(append(b, `,"arguments":`...), args...)
	return provider.Chunk{Data: append(b, `}}]},"finish_reason":null}]}`...), Content: true}
}

// ToolArgs continues tool call index's arguments; raw is a non-empty JSON string token.
func (c Chunks) ToolArgs(index int, raw []byte) provider.Chunk {
	b := c.choice(`{"tool_calls":[{"index":`)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(append(b, `,"function":{"arguments":`...), raw...)
	return provider.Chunk{Data: append(b, `}}]},"finish_reason":null}]}`...), Content: true}
}

// Finish carries the OpenAI finish_reason.
func (c Chunks) Finish(reason string) provider.Chunk {
	b := append(c.choice(`{}`), `,"finish_reason":"`...)
	return provider.Chunk{Data: append(append(b, reason...), `"}]}`...), Finish: true}
}

// Usage is the usage-only chunk (empty choices) OpenAI sends last when asked for usage.
func (c Chunks) Usage(u provider.Usage) provider.Chunk {
	b := make([]byte, 0, len(c.head)+96)
	b = appendUsage(append(append(b, c.head...), `[],"usage":`...), u)
	return provider.Chunk{Data: append(b, '}'), Usage: &u, UsageOnly: true}
}
