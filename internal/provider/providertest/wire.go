package providertest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// Fault is one way a provider can behave, from serving to each failure the gateway must
// classify.
type Fault string

// The faults every wire format can show.
const (
	Serve                 Fault = "serve"
	RateLimited           Fault = "429"
	RateLimitedRetryAfter Fault = "429 with Retry-After"
	Unavailable           Fault = "503"
	ContextTooLong        Fault = "400 context too long"
	Reset                 Fault = "reset before headers"
	Hung                  Fault = "hang until the caller leaves"
	SlowFirstEvent        Fault = "slow first event"
	CutMidStream          Fault = "cut mid-stream"
	Malformed             Fault = "malformed"
	MissingTerminator     Fault = "missing terminator"
)

// SlowDelay is how long SlowFirstEvent holds the answer back.
const SlowDelay = 150 * time.Millisecond

// Wire is one provider's wire format as the fakes speak it. Each format is small and hand-written
// from the provider's documentation; the adapters' own fixtures, checked against the official
// SDKs, cover the details.
type Wire struct {
	Name string
	// Answer is a complete non-streamed answer whose content is text.
	Answer func(text string) []byte
	// Events are a complete streamed answer whose content is text, each event with its
	// terminator. The first BeforeContent events carry no content; the last Terminal events are
	// what tells a complete answer from a cut one.
	Events                  func(text string) []string
	BeforeContent, Terminal int
	// Error is the provider's error body for a status.
	Error func(status int, message string) []byte
	// Streaming tells a streamed call from a plain one.
	Streaming func(r *http.Request) bool
}

// Handler answers every call with fault, serving text when the call gets through.
func (w Wire) Handler(fault Fault, text string) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		stream := w.Streaming(r)
		events := w.Events(text)
		switch fault {
		case Serve, SlowFirstEvent:
			if fault == SlowFirstEvent {
				time.Sleep(SlowDelay)
			}
			if stream {
				ServeSSE(events, 0, nil)(rw, r)
			} else {
				ServeJSON(http.StatusOK, w.Answer(text))(rw, r)
			}
		case RateLimited:
			ServeJSON(http.StatusTooManyRequests, w.Error(http.StatusTooManyRequests, "rate limit reached"))(rw, r)
		case RateLimitedRetryAfter:
			ServeJSON(http.StatusTooManyRequests, w.Error(http.StatusTooManyRequests, "rate limit reached"), "Retry-After", "2")(rw, r)
		case Unavailable:
			ServeJSON(http.StatusServiceUnavailable, w.Error(http.StatusServiceUnavailable, "the service is overloaded"))(rw, r)
		case ContextTooLong:
			ServeJSON(http.StatusBadRequest, w.Error(http.StatusBadRequest, contextTooLong[w.Name]))(rw, r)
		case Reset:
			ResetBeforeHeaders(rw, r)
		case Hung:
			Hang(rw, r)
		case CutMidStream, MissingTerminator:
			switch {
			case !stream:
				answer := w.Answer(text)
				CutBody(answer[:len(answer)/2], "100000")(rw, r)
			case fault == CutMidStream:
				ServeSSE(events[:w.BeforeContent], 0, Cut)(rw, r)
			default:
				ServeSSE(events[:len(events)-w.Terminal], 0, nil)(rw, r)
			}
		case Malformed:
			if !stream {
				WriteString(`{"id":"x","choices":[`)(rw, r)
				return
			}
			ServeSSE(append(events[:w.BeforeContent:w.BeforeContent], "data: {\"broken\": [\n\n"), 0, nil)(rw, r)
		default:
			panic("providertest: unknown fault " + string(fault))
		}
	}
}

// contextTooLong is each provider's documented message for a prompt over the context window:
// none of them has an error code for it, so the adapters recognise the message.
var contextTooLong = map[string]string{
	"openai":    "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
	"anthropic": "prompt is too long: 210000 tokens > 200000 maximum",
	"gemini":    "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// streamFlag reads a JSON body's "stream": OpenAI and Anthropic say streaming in the body.
func streamFlag(r *http.Request) bool {
	body, _ := io.ReadAll(r.Body)
	return gjson.GetBytes(body, "stream").Bool()
}

// OpenAI is the Chat Completions wire format.
var OpenAI = Wire{
	Name: "openai",
	Answer: func(text string) []byte {
		return []byte(`{"id":"chatcmpl-fake","object":"chat.completion","created":1700000000,"model":"gpt-fake","choices":[{"index":0,"message":{"role":"assistant","content":` +
			quote(text) + `},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`)
	},
	Events: func(text string) []string {
		const head = `data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1700000000,"model":"gpt-fake","choices":`
		return []string{
			head + `[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n",
			head + `[{"index":0,"delta":{"content":` + quote(text) + `},"finish_reason":null}]}` + "\n\n",
			head + `[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n",
			head + `[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}` + "\n\n",
			"data: [DONE]\n\n",
		}
	},
	BeforeContent: 1, Terminal: 3,
	Error: func(status int, message string) []byte {
		typ, code := "server_error", "null"
		switch {
		case status == http.StatusTooManyRequests:
			typ, code = "rate_limit_error", `"rate_limit_exceeded"`
		case status == http.StatusBadRequest:
			typ, code = "invalid_request_error", `"context_length_exceeded"`
		}
		return []byte(`{"error":{"message":` + quote(message) + `,"type":"` + typ + `","param":null,"code":` + code + `}}`)
	},
	Streaming: streamFlag,
}

// Anthropic is the Messages API wire format.
var Anthropic = Wire{
	Name: "anthropic",
	Answer: func(text string) []byte {
		return []byte(`{"id":"msg_fake","type":"message","role":"assistant","model":"claude-fake","content":[{"type":"text","text":` + quote(text) +
			`}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":3}}`)
	},
	Events: func(text string) []string {
		return []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_fake\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-fake\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":" + quote(text) + "}}\n\n",
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n",
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		}
	},
	BeforeContent: 2, Terminal: 2,
	Error: func(status int, message string) []byte {
		typ := "api_error"
		switch {
		case status == http.StatusTooManyRequests:
			typ = "rate_limit_error"
		case status == http.StatusServiceUnavailable:
			typ = "overloaded_error"
		case status < 500:
			typ = "invalid_request_error"
		}
		return []byte(`{"type":"error","error":{"type":"` + typ + `","message":` + quote(message) + `}}`)
	},
	Streaming: streamFlag,
}

// Gemini is the Gemini API wire format (generateContent, streamGenerateContent?alt=sse).
var Gemini = Wire{
	Name: "gemini",
	Answer: func(text string) []byte {
		return []byte(`{"candidates":[{"content":{"parts":[{"text":` + quote(text) + `}],"role":"model"},"finishReason":"STOP","index":0}],` +
			`"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":3,"totalTokenCount":8},"modelVersion":"gemini-fake","responseId":"resp-fake"}`)
	},
	Events: func(text string) []string {
		return []string{
			`data: {"candidates":[{"content":{"parts":[{"text":` + quote(text) + `}],"role":"model"},"index":0}],"modelVersion":"gemini-fake","responseId":"resp-fake"}` + "\r\n\r\n",
			`data: {"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],` +
				`"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":3,"totalTokenCount":8},"modelVersion":"gemini-fake","responseId":"resp-fake"}` + "\r\n\r\n",
		}
	},
	BeforeContent: 0, Terminal: 1,
	Error: func(status int, message string) []byte {
		canonical := "INTERNAL"
		switch status {
		case http.StatusTooManyRequests:
			canonical = "RESOURCE_EXHAUSTED"
		case http.StatusServiceUnavailable:
			canonical = "UNAVAILABLE"
		case http.StatusBadRequest:
			canonical = "INVALID_ARGUMENT"
		}
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": status, "message": message, "status": canonical}})
		return b
	},
	Streaming: func(r *http.Request) bool { return strings.Contains(r.URL.Path, ":streamGenerateContent") },
}
