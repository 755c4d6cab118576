package responsesapi

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"
)

const report = `{"served_by":"fake/ok","attempts":[]}`

// newObject is the Response object of a request with body, as the handler makes it.
func newObject(t *testing.T, body string) *object {
	t.Helper()
	req, err := read([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return &object{id: "resp_abc", created: 1700000000, echo: req.echo, model: "fake/ok", secureai: []byte(report)}
}

// chatCompletion is a chat.completion whose first choice has message and finish, with usage.
func chatCompletion(message, finish, usage string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-x","choices":[{"index":0,"message":` + message +
		`,"finish_reason":"` + finish + `"}],"usage":` + usage + `}`
}

const usage12x14 = `{"prompt_tokens":12,"completion_tokens":14,"total_tokens":26}`

func call(id, name, args string) string {
	return `{"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + quote(args) + `}}`
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func textItem(id, text string) string {
	return `{"type":"message","id":"` + id + `","status":"completed","role":"assistant","content":[{"type":"output_text","text":` + quote(text) + `,"annotations":[],"logprobs":[]}]}`
}

func callItem(id, callID, name, args string) string {
	return `{"type":"function_call","id":"` + id + `","call_id":"` + callID + `","name":"` + name + `","arguments":` + quote(args) + `,"status":"completed"}`
}

func TestAnswerIsTheResponseObject(t *testing.T) {
	for _, tc := range []struct {
		name, request, completion string
		want                      want
	}{
		{"text", `{"model":"m","input":"hi"}`, chatCompletion(`{"role":"assistant","content":"Hello."}`, "stop", usage12x14), want{
			"id": `"resp_abc"`, "object": `"response"`, "created_at": `1700000000`, "status": `"completed"`, "error": `null`, "incomplete_details": `null`,
			"model":    `"fake/ok"`,
			"output":   `[` + textItem("msg_0_abc", "Hello.") + `]`,
			"usage":    `{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":14,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":26}`,
			"secureai": report, "store": `false`, "previous_response_id": `null`, "truncation": `"disabled"`,
			// what the request did not set, at the API's defaults
			"instructions": `null`, "max_output_tokens": `null`, "parallel_tool_calls": `true`, "temperature": `null`, "top_p": `null`,
			"tool_choice": `"auto"`, "tools": `[]`, "text": `{"format":{"type":"text"}}`, "reasoning": `{"effort":null,"summary":null}`,
			"user": `null`, "metadata": `{}`,
		}},
		{"the request's settings are echoed", `{"model":"m","input":"hi","instructions":"Be terse.","max_output_tokens":64,"parallel_tool_calls":false,` +
			`"temperature":0.5,"top_p":0.9,"tool_choice":"required","tools":[{"type":"function","name":"f"}],"text":{"verbosity":"low"},` +
			`"reasoning":{"effort":"low"},"user":"u","metadata":{"k":"v"}}`,
			chatCompletion(`{"role":"assistant","content":"x"}`, "stop", usage12x14), want{
				"instructions": `"Be terse."`, "max_output_tokens": `64`, "parallel_tool_calls": `false`, "temperature": `0.5`, "top_p": `0.9`,
				"tool_choice": `"required"`, "tools": `[{"type":"function","name":"f"}]`, "text": `{"verbosity":"low"}`, "reasoning": `{"effort":"low"}`,
				"user": `"u"`, "metadata": `{"k":"v"}`,
			}},
		{"text and tool calls are a message item then function_call items", `{"model":"m","input":"hi"}`,
			chatCompletion(`{"role":"assistant","content":"Running.","tool_calls":[`+call("call_1", "exec_command", `{"cmd":"ls"}`)+`,`+call("call_2", "view_image", `{"path":"a.png"}`)+`]}`, "tool_calls", usage12x14), want{
				"status": `"completed"`,
				"output": `[` + textItem("msg_0_abc", "Running.") + `,` + callItem("fc_1_abc", "call_1", "exec_command", `{"cmd":"ls"}`) + `,` +
					callItem("fc_2_abc", "call_2", "view_image", `{"path":"a.png"}`) + `]`,
			}},
		{"tool calls alone are function_call items only", `{"model":"m","input":"hi"}`,
			chatCompletion(`{"role":"assistant","content":null,"tool_calls":[`+call("call_1", "f", `{}`)+`]}`, "tool_calls", usage12x14), want{
				"output": `[` + callItem("fc_0_abc", "call_1", "f", `{}`) + `]`,
			}},
		{"finish length is incomplete for max_output_tokens", `{"model":"m","input":"hi"}`, chatCompletion(`{"role":"assistant","content":"cut"}`, "length", usage12x14), want{
			"status": `"incomplete"`, "incomplete_details": `{"reason":"max_output_tokens"}`, "error": `null`, "output.0.content.0.text": `"cut"`}},
		{"finish content_filter is incomplete for content_filter", `{"model":"m","input":"hi"}`,
			chatCompletion(`{"role":"assistant","content":null,"refusal":"I can't."}`, "content_filter", usage12x14), want{
				"status": `"incomplete"`, "incomplete_details": `{"reason":"content_filter"}`, "output.0.content.0.text": `"I can't."`}},
		{"cached and reasoning tokens", `{"model":"m","input":"hi"}`, chatCompletion(`{"role":"assistant","content":"x"}`, "stop",
			`{"prompt_tokens":100,"completion_tokens":40,"prompt_tokens_details":{"cached_tokens":60},"completion_tokens_details":{"reasoning_tokens":30}}`), want{
			"usage": `{"input_tokens":100,"input_tokens_details":{"cached_tokens":60},"output_tokens":40,"output_tokens_details":{"reasoning_tokens":30},"total_tokens":140}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newObject(t, tc.request).appendWhole(nil, []byte(tc.completion))
			if !json.Valid(b) {
				t.Fatalf("not JSON: %s", b)
			}
			tc.want.Check(t, gjson.ParseBytes(b))
		})
	}
}

func TestStatusOfEachFinishReason(t *testing.T) {
	for finish, want := range map[string]status{"stop": {name: "completed"}, "tool_calls": {name: "completed"}, "": {name: "completed"},
		"length": {name: "incomplete", incomplete: "max_output_tokens"}, "content_filter": {name: "incomplete", incomplete: "content_filter"}} {
		if got := statusOf(finish); got != want {
			t.Errorf("statusOf(%q) = %+v, want %+v", finish, got, want)
		}
	}
}
