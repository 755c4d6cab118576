package messagesapi

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/testkit/wirecheck"
)

// want and absent state what a translated body must hold (wirecheck).
type want = wirecheck.Want

const absent = wirecheck.Absent

// translated reads body as a Messages request and returns the chat body it translates to.
func translated(t *testing.T, body string) (gjson.Result, *request) {
	t.Helper()
	req, err := read([]byte(body))
	if err != nil {
		t.Fatalf("refused: %v\nbody: %s", err, body)
	}
	if !json.Valid(req.in.Body) {
		t.Fatalf("the chat body is not JSON: %s", req.in.Body)
	}
	return gjson.ParseBytes(req.in.Body), req
}

// body is a Messages request of messages (a JSON array) with extra top-level members.
func body(messages string, extra ...string) string {
	s := `{"model":"m","max_tokens":100,"messages":` + messages
	for _, e := range extra {
		s += "," + e
	}
	return s + "}"
}

const hi = `[{"role":"user","content":"hi"}]`

func TestTranslatesEachRuleOfAMessagesRequest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		want    want
		dropped []string
	}{
		// system
		{"system string is the first chat message", body(hi, `"system":"Be terse."`), want{
			"messages.#": `2`, "messages.0": `{"role":"system","content":"Be terse."}`, "messages.1": `{"role":"user","content":"hi"}`}, nil},
		{"system blocks join into one system message, cache_control dropped", body(hi,
			`"system":[{"type":"text","text":"billing header"},{"type":"text","text":"You are an agent.","cache_control":{"type":"ephemeral"}}]`), want{
			"messages.0": `{"role":"system","content":"billing header\n\nYou are an agent."}`}, []string{"cache_control"}},
		{"system null is no system message", body(hi, `"system":null`), want{"messages.#": `1`, "messages.0.role": `"user"`}, nil},
		{"role system inside messages stays a system message in its place (Claude Code's environment)", body(
			`[{"role":"user","content":"q"},{"role":"system","content":"# Environment"},{"role":"assistant","content":"a"}]`, `"system":"S"`), want{
			"messages.#.role": `["system","user","system","assistant"]`, "messages.2.content": `"# Environment"`}, nil},
		{"role system inside messages with text blocks", body(`[{"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"user","content":"q"}]`), want{
			"messages.0": `{"role":"system","content":"a\n\nb"}`}, nil},

		// content blocks
		{"string content", body(`[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]`), want{
			"messages": `[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]`}, nil},
		{"text blocks are text parts", body(`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`), want{
			"messages.0.content": `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`}, nil},
		{"base64 image is a data URL", body(`[{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]`), want{
			"messages.0.content.1": `{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}`}, nil},
		{"url image is its URL", body(`[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/cat.jpg"}}]}]`), want{
			"messages.0.content": `[{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}}]`}, nil},
		{"tool_use blocks are the assistant's tool_calls, content null without text", body(
			`[{"role":"user","content":"read it"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"a.txt"}},{"type":"tool_use","id":"toolu_2","name":"Bash","input":{}}]}]`), want{
			"messages.1.role": `"assistant"`, "messages.1.content": `null`,
			"messages.1.tool_calls.#":    `2`,
			"messages.1.tool_calls.0.id": `"toolu_1"`, "messages.1.tool_calls.0.type": `"function"`, "messages.1.tool_calls.0.function.name": `"Read"`,
			"messages.1.tool_calls.0.function.arguments|@fromstr": `{"file_path":"a.txt"}`,
			"messages.1.tool_calls.1.function.arguments|@fromstr": `{}`}, nil},
		{"text then tool_use is one assistant message", body(
			`[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"t","name":"Read","input":{"p":1}}]}]`), want{
			"messages.#": `2`, "messages.1.content": `[{"type":"text","text":"Reading."}]`, "messages.1.tool_calls.0.function.name": `"Read"`}, nil},
		{"tool_result with string content is a tool message", body(
			`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"1\thello"}]}]`), want{
			"messages": `[{"role":"tool","tool_call_id":"toolu_1","content":"1\thello"}]`}, nil},
		{"tool_result with text blocks joins them", body(
			`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"line 1"},{"type":"text","text":"line 2"}]}]}]`), want{
			"messages.0.content": `"line 1\nline 2"`}, nil},
		{"tool_result with an image block drops the image and names it", body(
			`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"shot:"},{"type":"image","source":{"type":"url","url":"u"}}]}]}]`), want{
			"messages.0.content": `"shot:"`}, []string{"tool_result.image"}},
		{"tool_result is_error says so in the text", body(
			`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"no such file","is_error":true}]}]`), want{
			"messages.0.content": `"Error: no such file"`}, nil},
		{"tool_result without content is empty", body(`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t"}]}]`), want{
			"messages.0": `{"role":"tool","tool_call_id":"t","content":""}`}, nil},
		{"tool results come before the rest of their user turn", body(
			`[{"role":"user","content":[{"type":"text","text":"and now?"},{"type":"tool_result","tool_use_id":"a","content":"A"},{"type":"tool_result","tool_use_id":"b","content":"B"}]}]`), want{
			"messages.#.role": `["tool","tool","user"]`, "messages.#.tool_call_id": `["a","b"]`, "messages.2.content": `[{"type":"text","text":"and now?"}]`}, nil},
		{"thinking and redacted_thinking blocks are dropped and named", body(
			`[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"redacted_thinking","data":"xyz"},{"type":"text","text":"a"}]}]`), want{
			"messages.1": `{"role":"assistant","content":[{"type":"text","text":"a"}]}`}, []string{"thinking", "redacted_thinking"}},
		{"an assistant turn of thinking only leaves no message", body(
			`[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"}]}]`), want{
			"messages.#": `1`}, []string{"thinking"}},
		{"an unknown block type is dropped and named", body(`[{"role":"user","content":[{"type":"document","source":{}},{"type":"text","text":"q"}]}]`), want{
			"messages.0.content": `[{"type":"text","text":"q"}]`}, []string{"document"}},
		{"cache_control on a block is dropped and named", body(`[{"role":"user","content":[{"type":"text","text":"q","cache_control":{"type":"ephemeral"}}]}]`), want{
			"messages.0.content": `[{"type":"text","text":"q"}]`}, []string{"cache_control"}},

		// tools
		{"client tools are function tools", body(hi, `"tools":[{"name":"Read","description":"Reads a file.","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}}]`), want{
			"tools":       `[{"type":"function","function":{"name":"Read","description":"Reads a file.","parameters":{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}}}]`,
			"tool_choice": absent}, nil},
		{"a tool without input_schema takes an empty object schema", body(hi, `"tools":[{"name":"Ping"}]`), want{
			"tools.0.function": `{"name":"Ping","parameters":{"type":"object","properties":{}}}`}, nil},
		{"custom tools are function tools", body(hi, `"tools":[{"type":"custom","name":"Look","input_schema":{"type":"object"}}]`), want{
			"tools.#.function.name": `["Look"]`}, nil},
		{"server tools are dropped and named", body(hi, `"tools":[{"name":"Read","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search","max_uses":5},{"type":"bash_20250124","name":"bash"}]`), want{
			"tools.#.function.name": `["Read"]`}, []string{"tools.web_search_20250305", "tools.bash_20250124"}},
		{"only server tools leave no tools and no tool_choice", body(hi, `"tools":[{"type":"web_search_20250305","name":"web_search"}]`, `"tool_choice":{"type":"any"}`), want{
			"tools": absent, "tool_choice": absent}, []string{"tools.web_search_20250305"}},

		// tool_choice
		{"tool_choice auto", body(hi, `"tools":[{"name":"f"}]`, `"tool_choice":{"type":"auto"}`), want{"tool_choice": `"auto"`, "parallel_tool_calls": absent}, nil},
		{"tool_choice any is required", body(hi, `"tools":[{"name":"f"}]`, `"tool_choice":{"type":"any"}`), want{"tool_choice": `"required"`}, nil},
		{"tool_choice none", body(hi, `"tools":[{"name":"f"}]`, `"tool_choice":{"type":"none"}`), want{"tool_choice": `"none"`}, nil},
		{"tool_choice tool names the function", body(hi, `"tools":[{"name":"f"},{"name":"g"}]`, `"tool_choice":{"type":"tool","name":"g"}`), want{
			"tool_choice": `{"type":"function","function":{"name":"g"}}`}, nil},
		{"disable_parallel_tool_use is parallel_tool_calls false", body(hi, `"tools":[{"name":"f"}]`, `"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`), want{
			"tool_choice": `"auto"`, "parallel_tool_calls": `false`}, nil},
		{"disable_parallel_tool_use false says nothing", body(hi, `"tools":[{"name":"f"}]`, `"tool_choice":{"type":"any","disable_parallel_tool_use":false}`), want{
			"parallel_tool_calls": absent}, nil},

		// sampling and the rest
		{"max_tokens, temperature, top_p cross", body(hi, `"temperature":0.2`, `"top_p":0.9`), want{"max_tokens": `100`, "temperature": `0.2`, "top_p": `0.9`}, nil},
		{"stop_sequences are stop", body(hi, `"stop_sequences":["\n\nHuman:","END"]`), want{"stop": `["\n\nHuman:","END"]`}, nil},
		{"empty stop_sequences say nothing", body(hi, `"stop_sequences":[]`), want{"stop": absent}, nil},
		{"stream asks for usage", body(hi, `"stream":true`), want{"stream": `true`, "stream_options": `{"include_usage":true}`}, nil},
		{"stream false is a plain call", body(hi, `"stream":false`), want{"stream": absent, "stream_options": absent}, nil},
		{"the model and the gateway's members stay out of the chat body", `{"models":["a","b"],"max_tokens":100,"messages":` + hi + `,"metadata":{"user_id":"u"},"redundancy":{"timeout_ms":1000}}`, want{
			"model": absent, "models": absent, "metadata": absent, "redundancy": absent}, nil},
		{"thinking, output_config, context_management are dropped and named", body(hi,
			`"thinking":{"type":"adaptive","display":"omitted"}`, `"output_config":{"effort":"high"}`, `"context_management":{"edits":[]}`), want{
			"thinking": absent, "output_config": absent, "context_management": absent}, []string{"thinking", "output_config", "context_management"}},
		{"top_k, container, mcp_servers, service_tier are dropped and named", body(hi,
			`"top_k":5`, `"container":"c"`, `"mcp_servers":[]`, `"service_tier":"auto"`), want{
			"top_k": absent, "container": absent, "mcp_servers": absent, "service_tier": absent}, []string{"top_k", "container", "mcp_servers", "service_tier"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chat, req := translated(t, tc.body)
			tc.want.Check(t, chat)
			if !sameSet(req.dropped, tc.dropped) {
				t.Errorf("dropped %q, want %q", req.dropped, tc.dropped)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestReadCarriesStreamAndMaxTokensToTheCompletion(t *testing.T) {
	for _, tc := range []struct {
		body       string
		stream     bool
		maxTokens  int
		policy, id string
	}{
		{`{"model":"m","max_tokens":2048,"messages":` + hi + `}`, false, 2048, "", ""},
		{`{"model":"m","max_tokens":1,"stream":true,"messages":` + hi + `,"smltp_policy":"strict","user_id":"u1"}`, true, 1, "strict", "u1"},
	} {
		_, req := translated(t, tc.body)
		if req.in.Stream != tc.stream || req.in.MaxTokens != tc.maxTokens || req.in.Policy != tc.policy || req.in.UserID != tc.id || req.in.Surface != Surface {
			t.Errorf("%s: input %+v", tc.body, req.in)
		}
	}
}

func TestInvalidRequestsAre400sNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		name, body, param string
	}{
		{"missing max_tokens", `{"model":"m","messages":` + hi + `}`, "max_tokens"},
		{"max_tokens zero", `{"model":"m","max_tokens":0,"messages":` + hi + `}`, "max_tokens"},
		{"max_tokens a fraction", `{"model":"m","max_tokens":1.5,"messages":` + hi + `}`, "max_tokens"},
		{"max_tokens a string", `{"model":"m","max_tokens":"100","messages":` + hi + `}`, "max_tokens"},
		{"messages missing", `{"model":"m","max_tokens":10}`, "messages"},
		{"messages not an array", body(`{"role":"user","content":"hi"}`), "messages"},
		{"messages empty", body(`[]`), "messages"},
		{"a message not an object", body(`["hi"]`), "messages[0]"},
		{"bad role", body(`[{"role":"user","content":"q"},{"role":"tool","content":"x"}]`), "messages[1].role"},
		{"role missing", body(`[{"content":"x"}]`), "messages[0].role"},
		{"content a number", body(`[{"role":"user","content":7}]`), "messages[0].content"},
		{"a block without type", body(`[{"role":"user","content":[{"text":"x"}]}]`), "messages[0].content[0].type"},
		{"tool_use in a user message", body(`[{"role":"user","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}]`), "messages[0].content[0].type"},
		{"tool_result in an assistant message", body(`[{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]`), "messages[0].content[0].type"},
		{"tool_result content a number", body(`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":1}]}]`), "messages[0].content[0].content"},
		{"image source of another type", body(`[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}]`), "messages[0].content[0].source.type"},
		{"a system message with an image", body(`[{"role":"system","content":[{"type":"image","source":{"type":"url","url":"u"}}]}]`), "messages[0].content[0].type"},
		{"temperature above 1", body(hi, `"temperature":1.5`), "temperature"},
		{"temperature negative", body(hi, `"temperature":-0.1`), "temperature"},
		{"temperature a string", body(hi, `"temperature":"0.5"`), "temperature"},
		{"top_p above 1", body(hi, `"top_p":2`), "top_p"},
		{"stream not a boolean", body(hi, `"stream":"yes"`), "stream"},
		{"system a number", body(hi, `"system":1`), "system"},
		{"system block not text", body(hi, `"system":[{"type":"image","source":{"type":"url","url":"u"}}]`), "system[0].type"},
		{"tools not an array", body(hi, `"tools":{"name":"f"}`), "tools"},
		{"a tool without a name", body(hi, `"tools":[{"name":"f"},{"input_schema":{}}]`), "tools[1].name"},
		{"tool_choice of an unknown type", body(hi, `"tools":[{"name":"f"}]`, `"tool_choice":{"type":"sometimes"}`), "tool_choice.type"},
		{"smltp_policy not a string", body(hi, `"smltp_policy":1`), "smltp_policy"},
		{"user_id not a string", body(hi, `"user_id":{}`), "user_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := read([]byte(tc.body))
			if err == nil {
				t.Fatalf("accepted, translated to %s", req.in.Body)
			}
			f := fault.From(err)
			if f.K != fault.InvalidRequest || f.Param != tc.param || !strings.Contains(f.Message, strings.TrimSuffix(tc.param, ".type")) {
				t.Fatalf("error (param %q) %v, want a 400 naming %q", f.Param, f, tc.param)
			}
		})
	}
}

// Claude Code's second request of a tool turn (agent-clients.md §9): a system of three blocks
// (two with cache_control), its environment as a role-"system" message, an assistant turn of
// text and a tool_use, the tool_result with cache_control, twelve tools (one with
// defer_loading), and the members only Anthropic's models take.
func TestClaudeCodeToolTurnTranslates(t *testing.T) {
	raw, err := os.ReadFile("testdata/claude-code-tool-turn.json")
	if err != nil {
		t.Fatal(err)
	}
	chat, req := translated(t, string(raw))
	want{
		"messages.#.role": `["system","user","system","assistant","tool"]`,
		"messages.0.content": `"x-anthropic-billing-header: cc_version=2.1.328.893; cc_entrypoint=sdk-cli;\n\n` +
			`You are a Claude agent, built on Anthropic's Claude Agent SDK.\n\n` +
			`You are an interactive agent that helps users with software engineering tasks.…(6.7 KB)"`,
		"messages.1.content.#":                                `2`,
		"messages.1.content.1":                                `{"type":"text","text":"read the file hello.txt and tell me what it says"}`,
		"messages.2.content|@this":                            gjson.GetBytes(raw, "messages.1.content").Raw,
		"messages.3.content":                                  `[{"type":"text","text":"Reading the file."}]`,
		"messages.3.tool_calls.#":                             `1`,
		"messages.3.tool_calls.0.id":                          `"toolu_3b0a9c"`,
		"messages.3.tool_calls.0.function.name":               `"Read"`,
		"messages.3.tool_calls.0.function.arguments|@fromstr": `{"file_path":"/tmp/scratch/hello.txt"}`,
		"messages.4":                                          `{"role":"tool","tool_call_id":"toolu_3b0a9c","content":"1\thello from scratch file\n2\t"}`,
		"tools.#":                                             `12`,
		"tools.#.function.name": `["Agent","Bash","Edit","ListAgents","Read","ReportFindings","ScheduleWakeup","Skill","ToolSearch","Workflow",` +
			`"DeferredToolPlaceholder","Write"]`,
		"tools.4.function.parameters":  gjson.GetBytes(raw, "tools.4.input_schema").Raw,
		"tools.10.function":            `{"name":"DeferredToolPlaceholder","description":"Placeholder for deferred tools; never call this tool.","parameters":{"type":"object","properties":{}}}`,
		"max_tokens":                   `32000`,
		"stream":                       `true`,
		"stream_options.include_usage": `true`,
		"model":                        absent, "metadata": absent, "thinking": absent, "output_config": absent, "context_management": absent, "system": absent,
	}.Check(t, chat)
	if !sameSet(req.dropped, []string{"cache_control", "thinking", "output_config", "context_management"}) {
		t.Errorf("dropped %q", req.dropped)
	}
	if !req.in.Stream || req.in.MaxTokens != 32000 {
		t.Errorf("input: stream %v, max tokens %d", req.in.Stream, req.in.MaxTokens)
	}
	if strings.Contains(chat.Raw, "cache_control") || strings.Contains(chat.Raw, "defer_loading") {
		t.Errorf("cache_control or defer_loading crossed: %s", chat.Raw)
	}
}
