package messagesapi

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"
)

const report = `{"served_by":"fake/ok","attempts":[]}`

// completion is a chat.completion whose first choice has message and finish, with usage.
func chatCompletion(message, finish, usage string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-x","choices":[{"index":0,"message":` + message +
		`,"finish_reason":"` + finish + `"}],"usage":` + usage + `}`
}

const usage12x14 = `{"prompt_tokens":12,"completion_tokens":14,"total_tokens":26}`

func TestAnswerIsAnthropicsMessageObject(t *testing.T) {
	call := func(id, name, args string) string {
		return `{"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + args + `}}`
	}
	for _, tc := range []struct {
		name, completion string
		want             want
	}{
		{"text", chatCompletion(`{"role":"assistant","content":"Hello."}`, "stop", usage12x14), want{
			"id": `"msg_abc"`, "type": `"message"`, "role": `"assistant"`, "model": `"fake/ok"`,
			"content":       `[{"type":"text","text":"Hello."}]`,
			"stop_reason":   `"end_turn"`,
			"stop_sequence": `null`,
			"usage":         `{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":14}`,
			"secureai":      report,
		}},
		{"text and tool calls are a text block then tool_use blocks", chatCompletion(`{"role":"assistant","content":"Reading both.","tool_calls":[`+
			call("call_1", "Read", `"{\"file_path\":\"a.txt\"}"`)+`,`+call("call_2", "Bash", `"{\"command\":\"ls\"}"`)+`]}`, "tool_calls", usage12x14), want{
			"content": `[{"type":"text","text":"Reading both."},` +
				`{"type":"tool_use","id":"call_1","name":"Read","input":{"file_path":"a.txt"}},` +
				`{"type":"tool_use","id":"call_2","name":"Bash","input":{"command":"ls"}}]`,
			"stop_reason": `"tool_use"`,
		}},
		{"tool calls alone have no text block", chatCompletion(`{"role":"assistant","content":null,"tool_calls":[`+call("call_1", "Read", `"{}"`)+`]}`, "tool_calls", usage12x14), want{
			"content": `[{"type":"tool_use","id":"call_1","name":"Read","input":{}}]`,
		}},
		{"arguments that are not an object are an empty input", chatCompletion(`{"role":"assistant","content":null,"tool_calls":[`+
			call("c", "f", `"[1,2]"`)+`,`+call("d", "g", `"\"text\""`)+`]}`, "tool_calls", usage12x14), want{
			"content.#.input": `[{},{}]`,
		}},
		{"a call without id gets one", chatCompletion(`{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}`, "tool_calls", usage12x14), want{
			"content.0.id": `"toolu_gateway"`,
		}},
		{"an empty answer is one empty text block", chatCompletion(`{"role":"assistant","content":""}`, "stop", usage12x14), want{
			"content": `[{"type":"text","text":""}]`,
		}},
		{"finish length is max_tokens", chatCompletion(`{"role":"assistant","content":"cut"}`, "length", usage12x14), want{"stop_reason": `"max_tokens"`}},
		{"finish content_filter is refusal", chatCompletion(`{"role":"assistant","content":null,"refusal":"I can't help."}`, "content_filter", usage12x14), want{
			"stop_reason": `"refusal"`, "content": `[{"type":"text","text":"I can't help."}]`}},
		{"an unknown finish is end_turn", chatCompletion(`{"role":"assistant","content":"x"}`, "eos", usage12x14), want{"stop_reason": `"end_turn"`}},
		{"cached prompt tokens are cache reads, not input", chatCompletion(`{"role":"assistant","content":"x"}`, "stop",
			`{"prompt_tokens":100,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":80}}`), want{
			"usage": `{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":80,"output_tokens":5}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := appendMessage(nil, "msg_abc", "fake/ok", []byte(tc.completion), []byte(report))
			if !json.Valid(b) {
				t.Fatalf("not JSON: %s", b)
			}
			tc.want.Check(t, gjson.ParseBytes(b))
		})
	}
}

func TestStopReasonOfEachFinishReason(t *testing.T) {
	for finish, want := range map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use",
		"function_call": "tool_use", "content_filter": "refusal", "": "end_turn", "other": "end_turn"} {
		if got := stopReason(finish); got != want {
			t.Errorf("stopReason(%q) = %q, want %q", finish, got, want)
		}
	}
}
