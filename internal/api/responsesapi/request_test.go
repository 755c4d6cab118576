package responsesapi

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

// translated reads body as a Responses request and returns the chat body it translates to.
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

// body is a Responses request of input (a JSON value) with extra top-level members.
func body(input string, extra ...string) string {
	s := `{"model":"m","input":` + input
	for _, e := range extra {
		s += "," + e
	}
	return s + "}"
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func msg(role, content string) string {
	return `{"type":"message","role":"` + role + `","content":` + content + `}`
}

const fnTool = `{"type":"function","name":"exec_command","description":"Runs a command.","parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}`

func TestTranslatesEachRuleOfAResponsesRequest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		want    want
		dropped []string
	}{
		// input and messages
		{"input string is one user message", body(`"hi"`), want{"messages": `[{"role":"user","content":"hi"}]`}, nil},
		{"instructions are the first, system message", body(`[`+msg("user", `"hi"`)+`]`, `"instructions":"Be terse."`), want{
			"messages": `[{"role":"system","content":"Be terse."},{"role":"user","content":"hi"}]`}, nil},
		{"empty instructions say nothing", body(`"hi"`, `"instructions":""`), want{"messages.#": `1`}, nil},
		{"input_text parts are text parts", body(`[` + msg("user", `[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]`) + `]`), want{
			"messages": `[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`}, nil},
		{"a message item's type may be left out", body(`[{"role":"user","content":"hi"}]`), want{"messages": `[{"role":"user","content":"hi"}]`}, nil},
		{"input_image is an image_url part", body(`[` + msg("user", `[{"type":"input_text","text":"what is this"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"}]`) + `]`), want{
			"messages.0.content.1": `{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}`}, nil},
		{"developer is system, its parts joined as text", body(`[` + msg("developer", `[{"type":"input_text","text":"rule 1"},{"type":"input_text","text":"rule 2"}]`) + `,` + msg("user", `"q"`) + `]`), want{
			"messages": `[{"role":"system","content":"rule 1\n\nrule 2"},{"role":"user","content":"q"}]`}, nil},
		{"developer string content is system", body(`[` + msg("developer", `"rules"`) + `]`), want{"messages": `[{"role":"system","content":"rules"}]`}, nil},
		{"system stays system", body(`[` + msg("system", `"rules"`) + `]`), want{"messages": `[{"role":"system","content":"rules"}]`}, nil},
		{"assistant output_text is the assistant's text", body(`[` + msg("user", `"q"`) + `,` + msg("assistant", `[{"type":"output_text","text":"answer","annotations":[]}]`) + `]`), want{
			"messages": `[{"role":"user","content":"q"},{"role":"assistant","content":"answer"}]`}, nil},
		{"an unknown part type is dropped and named", body(`[` + msg("user", `[{"type":"input_file","file_id":"f"},{"type":"input_text","text":"q"}]`) + `]`), want{
			"messages": `[{"role":"user","content":[{"type":"text","text":"q"}]}]`}, []string{"input_file"}},

		// calls and their outputs
		{"function_call then its output: an assistant message with tool_calls, then a tool message", body(`[` + msg("user", `"run echo hi"`) +
			`,{"type":"function_call","id":"fc_1","call_id":"call_1","name":"exec_command","arguments":"{\"cmd\":\"echo hi\"}","status":"completed"}` +
			`,{"type":"function_call_output","id":"fco_1","call_id":"call_1","output":"hi\n"}]`), want{
			"messages.#.role":            `["user","assistant","tool"]`,
			"messages.1.content":         `null`,
			"messages.1.tool_calls":      `[{"id":"call_1","type":"function","function":{"name":"exec_command","arguments":"{\"cmd\":\"echo hi\"}"}}]`,
			"messages.2":                 `{"role":"tool","tool_call_id":"call_1","content":"hi\n"}`,
			"messages.1.tool_calls.0.id": `"call_1"`}, nil},
		{"assistant text then calls is one assistant message", body(`[` + msg("user", `"q"`) + `,` + msg("assistant", `[{"type":"output_text","text":"Running both."}]`) +
			`,{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"type":"function_call","call_id":"b","name":"g","arguments":"{\"x\":1}"}` +
			`,{"type":"function_call_output","call_id":"a","output":"A"},{"type":"function_call_output","call_id":"b","output":"B"}]`), want{
			"messages.#.role":                                     `["user","assistant","tool","tool"]`,
			"messages.1.content":                                  `"Running both."`,
			"messages.1.tool_calls.#.id":                          `["a","b"]`,
			"messages.1.tool_calls.#.function.name":               `["f","g"]`,
			"messages.1.tool_calls.1.function.arguments|@fromstr": `{"x":1}`,
			"messages.#.tool_call_id":                             `["a","b"]`}, nil},
		{"sequential calls are two assistant turns", body(`[{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"a","output":"A"},` +
			`{"type":"function_call","call_id":"b","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"b","output":"B"}]`), want{
			"messages.#.role": `["assistant","tool","assistant","tool"]`, "messages.2.tool_calls.0.id": `"b"`}, nil},
		{"a call left without output is still written", body(`[{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},` + msg("user", `"never mind"`) + `]`), want{
			"messages.#.role": `["assistant","user"]`, "messages.0.tool_calls.0.id": `"a"`}, nil},
		{"arguments that are not a string are {}", body(`[{"type":"function_call","call_id":"a","name":"f","arguments":{"x":1}}]`), want{
			"messages.0.tool_calls.0.function.arguments": `"{}"`}, nil},
		{"function_call_output as parts is their text", body(`[{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},` +
			`{"type":"function_call_output","call_id":"a","output":[{"type":"input_text","text":"part 1, "},{"type":"input_text","text":"part 2"}]}]`), want{
			"messages.1.content": `"part 1, part 2"`}, nil},
		{"custom_tool_call is a function call with its input as the one argument", body(`[{"type":"custom_tool_call","call_id":"c","name":"exec","input":"text(await tools.exec_command({cmd: \"echo hi\"}))"},` +
			`{"type":"custom_tool_call_output","call_id":"c","output":[{"type":"input_text","text":"Script completed\n"},{"type":"input_text","text":"hi"}]}]`), want{
			"messages.0.tool_calls.0.function.name":               `"exec"`,
			"messages.0.tool_calls.0.function.arguments|@fromstr": `{"input":"text(await tools.exec_command({cmd: \"echo hi\"}))"}`,
			"messages.1": `{"role":"tool","tool_call_id":"c","content":"Script completed\nhi"}`}, nil},
		{"reasoning items are dropped and named", body(`[` + msg("user", `"q"`) + `,{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},` +
			`{"type":"function_call","call_id":"a","name":"f","arguments":"{}"}]`), want{
			"messages.#.role": `["user","assistant"]`}, []string{"reasoning"}},
		{"hosted tools' calls are dropped and named", body(`[` + msg("user", `"q"`) + `,{"type":"web_search_call","id":"ws_1","status":"completed"}]`), want{
			"messages.#": `1`}, []string{"web_search_call"}},

		// tools
		{"function tools are chat function tools", body(`"hi"`, `"tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object","properties":{}},"strict":true}]`), want{
			"tools": `[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{}},"strict":true}}]`}, nil},
		{"strict false says nothing", body(`"hi"`, `"tools":[{"type":"function","name":"f","strict":false}]`), want{"tools.0.function": `{"name":"f"}`}, nil},
		{"namespace tools are flattened", body(`"hi"`, `"tools":[`+fnTool+`,{"type":"namespace","name":"multi_agent_v1","description":"sub-agents","tools":[{"type":"function","name":"spawn_agent"},{"type":"function","name":"close_agent"}]}]`), want{
			"tools.#.function.name": `["exec_command","spawn_agent","close_agent"]`}, nil},
		{"web_search and custom tools are dropped and named", body(`"hi"`, `"tools":[`+fnTool+`,{"type":"web_search","external_web_access":false},{"type":"custom","name":"exec","format":{"type":"grammar"}}]`), want{
			"tools.#.function.name": `["exec_command"]`}, []string{"tools.web_search", "tools.custom"}},
		{"additional_tools items add their tools", body(`[{"type":"additional_tools","role":"developer","tools":[{"type":"namespace","name":"functions","tools":[{"type":"custom","name":"exec"},` + fnTool + `]}]},` + msg("user", `"q"`) + `]`), want{
			"tools.#.function.name": `["exec_command"]`, "messages": `[{"role":"user","content":"q"}]`}, []string{"tools.custom"}},
		{"additional_tools and tools together", body(`[{"type":"additional_tools","tools":[{"type":"function","name":"b"}]},`+msg("user", `"q"`)+`]`, `"tools":[{"type":"function","name":"a"}]`), want{
			"tools.#": `2`, `tools.#(function.name=="a").type`: `"function"`, `tools.#(function.name=="b").type`: `"function"`}, nil},
		{"only dropped tools leave no tools, tool_choice nor parallel_tool_calls", body(`"hi"`, `"tools":[{"type":"web_search"}]`, `"tool_choice":"required"`, `"parallel_tool_calls":false`), want{
			"tools": absent, "tool_choice": absent, "parallel_tool_calls": absent}, []string{"tools.web_search"}},

		// tool_choice
		{"tool_choice auto", body(`"hi"`, `"tools":[`+fnTool+`]`, `"tool_choice":"auto"`), want{"tool_choice": `"auto"`}, nil},
		{"tool_choice none", body(`"hi"`, `"tools":[`+fnTool+`]`, `"tool_choice":"none"`), want{"tool_choice": `"none"`}, nil},
		{"tool_choice required", body(`"hi"`, `"tools":[`+fnTool+`]`, `"tool_choice":"required"`), want{"tool_choice": `"required"`}, nil},
		{"tool_choice of a function names it", body(`"hi"`, `"tools":[`+fnTool+`]`, `"tool_choice":{"type":"function","name":"exec_command"}`), want{
			"tool_choice": `{"type":"function","function":{"name":"exec_command"}}`}, nil},
		{"tool_choice of a hosted tool is dropped and named", body(`"hi"`, `"tools":[`+fnTool+`]`, `"tool_choice":{"type":"web_search_preview"}`), want{
			"tool_choice": absent}, []string{"tool_choice.web_search_preview"}},
		{"parallel_tool_calls crosses", body(`"hi"`, `"tools":[`+fnTool+`]`, `"parallel_tool_calls":false`), want{"parallel_tool_calls": `false`}, nil},

		// output and sampling
		{"max_output_tokens is max_tokens", body(`"hi"`, `"max_output_tokens":256`), want{"max_tokens": `256`, "max_output_tokens": absent}, nil},
		{"temperature and top_p cross", body(`"hi"`, `"temperature":1.5`, `"top_p":0.5`), want{"temperature": `1.5`, "top_p": `0.5`}, nil},
		{"text.format json_schema is response_format", body(`"hi"`, `"text":{"format":{"type":"json_schema","name":"answer","schema":{"type":"object","properties":{"a":{"type":"string"}}},"strict":true}}`), want{
			"response_format": `{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object","properties":{"a":{"type":"string"}}},"strict":true}}`,
			"text":            absent}, nil},
		{"text.format json_object is response_format", body(`"hi"`, `"text":{"format":{"type":"json_object"}}`), want{"response_format": `{"type":"json_object"}`}, nil},
		{"text.format text and verbosity say nothing", body(`"hi"`, `"text":{"format":{"type":"text"},"verbosity":"low"}`), want{"response_format": absent}, nil},
		{"user crosses", body(`"hi"`, `"user":"u-1"`), want{"user": `"u-1"`}, nil},
		{"stream asks for usage", body(`"hi"`, `"stream":true`), want{"stream": `true`, "stream_options": `{"include_usage":true}`}, nil},
		{"what Chat Completions lacks stays out", body(`"hi"`, `"store":false`, `"include":["reasoning.encrypted_content"]`, `"prompt_cache_key":"k"`,
			`"client_metadata":{"session_id":"s"}`, `"reasoning":{"effort":"low","context":"all_turns"}`, `"metadata":{"a":"b"}`), want{
			"store": absent, "include": absent, "prompt_cache_key": absent, "client_metadata": absent, "reasoning": absent, "metadata": absent, "model": absent}, nil},
		{"previous_response_id null and background false are fine", body(`"hi"`, `"previous_response_id":null`, `"background":false`, `"conversation":null`), want{
			"messages.#": `1`}, nil},
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

func TestReadCarriesStreamAndMaxTokensToTheCompletion(t *testing.T) {
	_, req := translated(t, body(`"hi"`, `"stream":true`, `"max_output_tokens":300`, `"smltp_policy":"strict"`, `"user_id":"u1"`))
	if !req.in.Stream || req.in.MaxTokens != 300 || req.in.Policy != "strict" || req.in.UserID != "u1" || req.in.Surface != Surface {
		t.Errorf("input %+v", req.in)
	}
	_, req = translated(t, body(`"hi"`))
	if req.in.Stream || req.in.MaxTokens != 0 {
		t.Errorf("input %+v", req.in)
	}
}

func TestInvalidRequestsAre400sNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		name, body, param string
	}{
		{"previous_response_id", body(`"hi"`, `"previous_response_id":"resp_1"`), "previous_response_id"},
		{"background", body(`"hi"`, `"background":true`), "background"},
		{"conversation", body(`"hi"`, `"conversation":"conv_1"`), "conversation"},
		{"conversation as an object", body(`"hi"`, `"conversation":{"id":"conv_1"}`), "conversation"},
		{"item_reference", body(`[` + msg("user", `"q"`) + `,{"type":"item_reference","id":"msg_1"}]`), "input[1].type"},
		{"input missing", `{"model":"m"}`, "input"},
		{"input empty", body(`[]`), "input"},
		{"input a number", body(`1`), "input"},
		{"an item not an object", body(`["hi"]`), "input[0]"},
		{"an item without type or role", body(`[{"content":"hi"}]`), "input[0].type"},
		{"a message of an unknown role", body(`[` + msg("tool", `"x"`) + `]`), "input[0].role"},
		{"a user message's content a number", body(`[` + msg("user", `1`) + `]`), "input[0].content"},
		{"an image by file id", body(`[` + msg("user", `[{"type":"input_image","file_id":"file_1"}]`) + `]`), "input[0].content[0].image_url"},
		{"stream not a boolean", body(`"hi"`, `"stream":"yes"`), "stream"},
		{"max_output_tokens zero", body(`"hi"`, `"max_output_tokens":0`), "max_output_tokens"},
		{"max_output_tokens a fraction", body(`"hi"`, `"max_output_tokens":10.5`), "max_output_tokens"},
		{"temperature above 2", body(`"hi"`, `"temperature":2.5`), "temperature"},
		{"top_p above 1", body(`"hi"`, `"top_p":1.5`), "top_p"},
		{"instructions not a string", body(`"hi"`, `"instructions":["a"]`), "instructions"},
		{"tools not an array", body(`"hi"`, `"tools":{}`), "tools"},
		{"a function tool without a name", body(`"hi"`, `"tools":[{"type":"function"}]`), "tools[0].name"},
		{"tool_choice an unknown string", body(`"hi"`, `"tools":[`+fnTool+`]`, `"tool_choice":"sometimes"`), "tool_choice"},
		{"smltp_policy not a string", body(`"hi"`, `"smltp_policy":1`), "smltp_policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := read([]byte(tc.body))
			if err == nil {
				t.Fatalf("accepted, translated to %s", req.in.Body)
			}
			f := fault.From(err)
			if f.K != fault.InvalidRequest || f.Param != tc.param || !strings.Contains(f.Message, named(tc.param)) {
				t.Fatalf("error (param %q) %v, want a 400 naming %q", f.Param, f, tc.param)
			}
		})
	}
}

// named is what an error's message must name of param: the field, or for a member of an item
// or part (input[1].type) the item or part.
func named(param string) string {
	if i := strings.LastIndexByte(param, '.'); i > 0 && strings.Contains(param[:i], "[") {
		return param[:i]
	}
	return param
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Codex's second request of a tool turn with a gateway model id (agent-clients.md §9): the
// system prompt as developer messages, a reasoning item, function_call and its output, function
// tools, a namespace and web_search, and the members only OpenAI's Responses API takes.
func TestCodexToolTurnTranslates(t *testing.T) {
	raw := fixture(t, "codex-tool-turn.json")
	chat, req := translated(t, string(raw))
	want{
		"messages.#.role":             `["system","system","user","user","assistant","tool"]`,
		"messages.0.content":          `"You are a coding agent running in the Codex CLI…(17 KB)"`,
		"messages.1.content":          `"<skills_instructions>…\n\n<permissions instructions>…"`,
		"messages.3.content":          `[{"type":"text","text":"run echo hi"}]`,
		"messages.4.content":          `null`,
		"messages.4.tool_calls":       `[{"id":"call_7Xq","type":"function","function":{"name":"exec_command","arguments":"{\"cmd\": \"echo hi\"}"}}]`,
		"messages.5.tool_call_id":     `"call_7Xq"`,
		"messages.5.content":          gjson.GetBytes(raw, "input.6.output").Raw,
		"tools.#.function.name":       `["exec_command","write_stdin","request_user_input","view_image","spawn_agent","close_agent","get_goal","create_goal","update_goal"]`,
		"tools.0.function.parameters": gjson.GetBytes(raw, "tools.0.parameters").Raw,
		"tools.0.function.strict":     absent,
		"tool_choice":                 `"auto"`,
		"parallel_tool_calls":         `true`,
		"stream":                      `true`,
		"stream_options":              `{"include_usage":true}`,
		"model":                       absent, "store": absent, "include": absent, "prompt_cache_key": absent, "client_metadata": absent, "reasoning": absent, "input": absent,
	}.Check(t, chat)
	if !sameSet(req.dropped, []string{"reasoning", "tools.web_search"}) {
		t.Errorf("dropped %q", req.dropped)
	}
	if strings.Contains(chat.Raw, "encrypted_content") || strings.Contains(chat.Raw, "namespace") {
		t.Errorf("reasoning or a namespace crossed: %s", chat.Raw)
	}
}

// The same turn with Codex's default model (agent-clients.md §5, §9): its tools come in an
// additional_tools item of namespaces, one holding the custom tool exec, whose call and output
// (custom_tool_call, custom_tool_call_output with input_text parts) are in the history.
func TestCodexDefaultModelToolTurnTranslates(t *testing.T) {
	raw := fixture(t, "codex-default-model-tool-turn.json")
	chat, req := translated(t, string(raw))
	want{
		"messages.#.role":                                     `["system","user","assistant","tool"]`,
		"messages.0.content":                                  `"You are Codex…"`,
		"messages.2.tool_calls.#":                             `1`,
		"messages.2.tool_calls.0.id":                          `"call_9Kd"`,
		"messages.2.tool_calls.0.function.name":               `"exec"`,
		"messages.2.tool_calls.0.function.arguments|@fromstr": `{"input":"text(await tools.exec_command({cmd: \"echo hi\"}))"}`,
		"messages.3":                                          `{"role":"tool","tool_call_id":"call_9Kd","content":"Script completed\nWall time 0.1 seconds\nOutput:\n{\"chunk_id\":\"a1\",\"exit_code\":0,\"output\":\"hi\\n\"}"}`,
		"tools.#.function.name":                               `["exec_command","write_stdin","now","request_user_input"]`,
		"tool_choice":                                         `"auto"`,
		"parallel_tool_calls":                                 `false`,
		"response_format":                                     absent,
		"text":                                                absent,
		"reasoning":                                           absent,
	}.Check(t, chat)
	if !sameSet(req.dropped, []string{"reasoning", "tools.custom"}) {
		t.Errorf("dropped %q", req.dropped)
	}
}
