package openaiapi

import (
	"testing"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/tidwall/gjson"
)

func TestCheckMessagesAsOpenAIDoes(t *testing.T) {
	call := `{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}`
	for _, tc := range []struct {
		name, messages, param string // param "" means accepted
	}{
		{"user text", `[{"role":"user","content":"hi"}]`, ""},
		{"system, developer, user, assistant", `[{"role":"system","content":"s"},{"role":"developer","content":"d"},{"role":"user","content":"u"},{"role":"assistant","content":"a"}]`, ""},
		{"user parts: text and image", `[{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]`, ""},
		{"assistant calling a tool without content", `[{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[` + call + `]},{"role":"tool","tool_call_id":"call_1","content":"sunny"}]`, ""},
		{"assistant refusal part", `[{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]}]`, ""},
		{"deprecated function role", `[{"role":"function","name":"f","content":"42"}]`, ""},

		{"empty array", `[]`, "messages"},
		{"not an array", `{"role":"user"}`, "messages"},
		{"a message not an object", `["hi"]`, "messages[0]"},
		{"role missing", `[{"content":"hi"}]`, "messages[0].role"},
		{"unknown role", `[{"role":"robot","content":"hi"}]`, "messages[0].role"},
		{"user without content", `[{"role":"user"}]`, "messages[0].content"},
		{"content a number", `[{"role":"user","content":42}]`, "messages[0].content"},
		{"part without type", `[{"role":"user","content":[{"text":"hi"}]}]`, "messages[0].content[0]"},
		{"image part for the system role", `[{"role":"system","content":[{"type":"image_url","image_url":{"url":"u"}}]}]`, "messages[0].content[0].type"},
		{"text part without text", `[{"role":"user","content":[{"type":"text"}]}]`, "messages[0].content[0].text"},
		{"image_url without url", `[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]`, "messages[0].content[0].image_url"},
		{"tool_calls on a user message", `[{"role":"user","content":"x","tool_calls":[` + call + `]}]`, "messages[0].tool_calls"},
		{"tool call without id", `[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]`, "messages[0].tool_calls[0].id"},
		{"tool call arguments an object", `[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{}}}]}]`, "messages[0].tool_calls[0].function.arguments"},
		{"tool message without tool_call_id", `[{"role":"tool","content":"sunny"}]`, "messages[0].tool_call_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkMessages(gjson.Parse(tc.messages))
			if tc.param == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			f := fault.From(err)
			if err == nil || f.K != fault.InvalidRequest || f.Param != tc.param || f.Message == "" {
				t.Fatalf("error %+v, want a 400 naming %q", f, tc.param)
			}
		})
	}
}

// The completion gets the output the request allows from the surface's one read of the body:
// the larger of max_tokens and max_completion_tokens, 0 when neither is set.
func TestReadCarriesMaxTokens(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	for body, want := range map[string]int{
		`{` + msgs + `}`:                                               0,
		`{` + msgs + `,"max_tokens":200}`:                              200,
		`{` + msgs + `,"max_completion_tokens":300}`:                   300,
		`{` + msgs + `,"max_tokens":200,"max_completion_tokens":300}`:  300,
		`{` + msgs + `,"max_tokens":null,"max_completion_tokens":300}`: 300,
	} {
		in, err := Read([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if in.MaxTokens != want {
			t.Errorf("%s: MaxTokens %d, want %d", body, in.MaxTokens, want)
		}
	}
}

// Issue 34.4: the gateway prices, reserves and bills one answer per request, so a request for
// several (n, best_of) is a 400 naming the field instead of answers billed as one; n and best_of
// absent, null or 1 ask for one answer and are accepted.
func TestOneAnswerPerRequest(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct{ fields, param string }{
		{``, ""},
		{`,"n":null`, ""},
		{`,"n":1`, ""},
		{`,"n":1.0,"best_of":1`, ""},
		{`,"best_of":null`, ""},
		{`,"n":2`, "n"},
		{`,"n":128`, "n"},
		{`,"n":0`, "n"},
		{`,"n":1.5`, "n"},
		{`,"n":"2"`, "n"},
		{`,"n":[2]`, "n"},
		{`,"best_of":3`, "best_of"},
		{`,"n":1,"best_of":2`, "best_of"},
	} {
		_, err := Read([]byte(`{` + msgs + tc.fields + `}`))
		if tc.param == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", tc.fields, err)
			}
			continue
		}
		if f := fault.From(err); err == nil || f.K != fault.InvalidRequest || f.Param != tc.param {
			t.Errorf("%s: error %+v, want a 400 naming %q", tc.fields, f, tc.param)
		}
	}
}
