package chatanswer

import (
	"reflect"
	"testing"
)

func TestReadTakesTextCallsFinishAndUsageOfTheFirstChoice(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       Answer
	}{
		{"text", `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
			Answer{ID: "chatcmpl-1", Text: "Hello.", Finish: "stop", Usage: Usage{Input: 12, Output: 3}}},
		{"tool calls in order, content null", `{"id":"c","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[` +
			`{"id":"call_a","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"a\"}"}},` +
			`{"id":"call_b","type":"function","function":{"name":"Bash","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			Answer{ID: "c", Finish: "tool_calls", Calls: []ToolCall{{"call_a", "Read", `{"file_path":"a"}`}, {"call_b", "Bash", "{}"}}}},
		{"refusal stands for the text", `{"choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't."},"finish_reason":"content_filter"}]}`,
			Answer{Text: "I can't.", Finish: "content_filter"}},
		{"content wins over refusal", `{"choices":[{"message":{"content":"yes","refusal":"no"},"finish_reason":"stop"}]}`,
			Answer{Text: "yes", Finish: "stop"}},
		{"cached and reasoning tokens", `{"choices":[{"message":{"content":"x"},"finish_reason":"length"}],"usage":{"prompt_tokens":100,"completion_tokens":40,` +
			`"prompt_tokens_details":{"cached_tokens":60},"completion_tokens_details":{"reasoning_tokens":30}}}`,
			Answer{Text: "x", Finish: "length", Usage: Usage{Input: 100, Output: 40, Cached: 60, Reasoning: 30}}},
		{"only the first choice counts", `{"choices":[{"message":{"content":"first"},"finish_reason":"stop"},{"message":{"content":"second"},"finish_reason":"length"}]}`,
			Answer{Text: "first", Finish: "stop"}},
		{"no choices", `{"id":"x","choices":[]}`, Answer{ID: "x"}},
		{"not JSON", `not json`, Answer{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Read([]byte(tc.body)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestReadChunkTakesWhatTheChunkAdds(t *testing.T) {
	const head = `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":`
	for _, tc := range []struct {
		name, chunk string
		want        Delta
	}{
		{"role chunk adds nothing", head + `{"role":"assistant","content":""},"finish_reason":null}]}`, Delta{}},
		{"text", head + `{"content":" world"},"finish_reason":null}]}`, Delta{Text: " world"}},
		{"refusal as text", head + `{"refusal":"no"},"finish_reason":null}]}`, Delta{Text: "no"}},
		{"a call's first piece names it", head + `{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"Read","arguments":""}}]},"finish_reason":null}]}`,
			Delta{Calls: []CallDelta{{Index: 0, ID: "call_a", Name: "Read"}}}},
		{"later pieces carry arguments only", head + `{"tool_calls":[{"index":1,"function":{"arguments":"{\"a\":"}}]},"finish_reason":null}]}`,
			Delta{Calls: []CallDelta{{Index: 1, Arguments: `{"a":`}}}},
		{"two calls in one chunk", head + `{"tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":"{}"}},{"index":1,"id":"y","function":{"name":"g","arguments":"{}"}}]}}]}`,
			Delta{Calls: []CallDelta{{0, "x", "f", "{}"}, {1, "y", "g", "{}"}}}},
		{"finish", head + `{},"finish_reason":"tool_calls"}]}`, Delta{Finish: "tool_calls"}},
		{"usage chunk without choices", `{"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":14,"total_tokens":26,"prompt_tokens_details":{"cached_tokens":2}}}`,
			Delta{Usage: &Usage{Input: 12, Output: 14, Cached: 2}}},
		{"usage null is no usage", head + `{"content":"a"},"finish_reason":null}],"usage":null}`, Delta{Text: "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReadChunk([]byte(tc.chunk)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
