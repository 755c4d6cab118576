package responsesapi

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/jsonview"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

// request is a Responses request read and translated: what the completion runs, and what the
// answer must say of it.
type request struct {
	in      completion.Input
	dropped []string // what could not cross to the Chat Completions shape, for the report
	echo    echo
}

// echo is what the response object repeats of the request: each member's JSON as sent, "" when
// absent.
type echo struct {
	instructions, toolChoice, tools, parallel, maxOutput, temperature, topP, text, reasoning, user, metadata string
}

// size is how many bytes the echoed members take.
func (e *echo) size() int {
	n := 0
	for _, v := range [...]string{e.instructions, e.toolChoice, e.tools, e.parallel, e.maxOutput, e.temperature, e.topP, e.text, e.reasoning, e.user, e.metadata} {
		n += len(v)
	}
	return n
}

// fields are the members read in read's one pass, in this order.
var fields = [...]string{"input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "max_output_tokens",
	"temperature", "top_p", "stream", "text", "reasoning", "user", "metadata", "previous_response_id", "background",
	"conversation", "model", "models", "fallback_models", "redundancy", "smltp_policy", "user_id", "fallbacks"}

// read validates body as a Responses request and translates it into the Chat Completions body
// every attempt of the chain translates afresh for its provider (SPEC 12). The gateway keeps no
// responses, so a request must carry its whole conversation (store: false, as Codex sends it).
// What Chat Completions lacks — reasoning items and their encrypted content, hosted and custom
// tools, namespaces' grouping — is dropped and named in the report, never a 500.
func read(body []byte) (*request, error) {
	var f [len(fields)]gjson.Result
	jsonview.Fields(f[:], jsonview.String(body), fields[:]...)
	input, instructions, tools, choice, stream := f[0], f[1], f[2], f[3], f[8]
	switch {
	case f[13].Exists() && f[13].Type != gjson.Null:
		return nil, fault.Invalid("previous_response_id", "previous_response_id: this gateway stores no responses; send the whole conversation in input (store: false)")
	case f[14].Type == gjson.True:
		return nil, fault.Invalid("background", "background responses are not supported: this gateway stores no responses")
	case f[15].Exists() && f[15].Type != gjson.Null:
		return nil, fault.Invalid("conversation", "conversation: this gateway stores no conversations; send the whole conversation in input")
	case stream.Exists() && stream.Type != gjson.True && stream.Type != gjson.False && stream.Type != gjson.Null:
		return nil, fault.Invalid("stream", "stream must be a boolean")
	}
	for i, r := range [...]struct {
		lo, hi  float64
		integer bool
	}{5: {1, 1 << 30, true}, 6: {0, 2, false}, 7: {0, 1, false}} {
		v := f[i]
		if r.hi == 0 || !v.Exists() || v.Type == gjson.Null {
			continue
		}
		if v.Type != gjson.Number || v.Num < r.lo || v.Num > r.hi || (r.integer && v.Num != float64(int64(v.Num))) {
			return nil, fault.Invalid(fields[i], fields[i]+" must be a number between "+strconv.FormatFloat(r.lo, 'f', -1, 64)+" and "+strconv.FormatFloat(r.hi, 'f', -1, 64))
		}
	}
	for _, i := range [...]int{20, 21} {
		if v := f[i]; v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
			return nil, fault.Invalid(fields[i], fields[i]+" must be a string")
		}
	}
	spec, err := chain.SpecOf(f[16], f[17], f[18], f[19])
	if err == nil {
		err = spec.LiteLLMFallbacks(f[22])
	}
	if err != nil {
		return nil, err
	}
	t := translator{b: make([]byte, 0, len(body)+256)}
	t.b = append(t.b, `{"messages":[`...)
	switch {
	case instructions.Type == gjson.String && instructions.Str != "":
		t.b = translate.AppendString(append(t.b, `{"role":"system","content":`...), instructions.Str)
		t.b = append(t.b, '}')
	case instructions.Exists() && instructions.Type != gjson.Null && instructions.Type != gjson.String:
		return nil, fault.Invalid("instructions", "instructions must be a string")
	}
	if err := t.input(input); err != nil {
		return nil, err
	}
	t.b = append(t.b, ']')
	if err := t.appendTools(tools); err != nil {
		return nil, err
	}
	if len(t.tools) > 0 {
		t.b = append(append(append(t.b, `,"tools":[`...), t.tools...), ']')
		if err := t.toolChoice(choice); err != nil {
			return nil, err
		}
		if p := f[4]; p.Type == gjson.True || p.Type == gjson.False {
			t.b = append(append(t.b, `,"parallel_tool_calls":`...), p.Raw...)
		}
	}
	if v := f[5]; v.Type == gjson.Number {
		t.b = append(append(t.b, `,"max_tokens":`...), v.Raw...)
	}
	for _, i := range [...]int{6, 7} {
		if v := f[i]; v.Type == gjson.Number {
			t.b = append(append(append(append(t.b, ',', '"'), fields[i]...), `":`...), v.Raw...)
		}
	}
	t.responseFormat(f[9].Get("format"))
	if u := f[11]; u.Type == gjson.String {
		t.b = append(append(t.b, `,"user":`...), u.Raw...)
	}
	if stream.Type == gjson.True {
		t.b = append(t.b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	t.b = append(t.b, '}')
	return &request{in: completion.Input{Surface: Surface, Body: t.b, Chain: spec, Stream: stream.Type == gjson.True,
		MaxTokens: int(f[5].Int()), Policy: strings.Clone(f[20].Str), UserID: strings.Clone(f[21].Str)},
		dropped: t.dropped,
		echo: echo{instructions: instructions.Raw, toolChoice: choice.Raw, tools: tools.Raw, parallel: f[4].Raw, maxOutput: f[5].Raw,
			temperature: f[6].Raw, topP: f[7].Raw, text: f[9].Raw, reasoning: f[10].Raw, user: f[11].Raw, metadata: f[12].Raw}}, nil
}

// translator appends the Chat Completions body.
type translator struct {
	b       []byte
	tools   []byte // the function tools, from tools and from additional_tools input items
	dropped []string

	// An assistant turn in the making: its text, then the calls that follow it, written as one
	// chat message once an item of another kind comes.
	text    []byte
	calls   []byte
	pending bool
}

func (t *translator) drop(what string) {
	for _, d := range t.dropped {
		if d == what {
			return
		}
	}
	t.dropped = append(t.dropped, what)
}

// input writes the conversation: a string is one user message; items are messages, function
// calls and their outputs.
func (t *translator) input(input gjson.Result) error {
	switch {
	case input.Type == gjson.String:
		t.b = translate.AppendString(append(translate.Sep(t.b), `{"role":"user","content":`...), input.Str)
		t.b = append(t.b, '}')
		return nil
	case !input.IsArray() || len(input.Array()) == 0:
		return fault.Invalid("input", "input is required: a string or a non-empty array of items")
	}
	var err error
	input.ForEach(func(k, item gjson.Result) bool {
		err = t.item("input["+k.String()+"]", item)
		return err == nil
	})
	if err != nil {
		return err
	}
	t.flush()
	return nil
}

func (t *translator) item(p string, item gjson.Result) error {
	if !item.IsObject() {
		return fault.Invalid(p, p+" must be an object")
	}
	typ := item.Get("type").String()
	if typ == "" && item.Get("role").Exists() {
		typ = "message"
	}
	switch typ {
	case "message":
		return t.message(p, item)
	case "function_call":
		t.call(item.Get("call_id").String(), item.Get("name").String(), []byte(item.Get("arguments").Raw))
	case "custom_tool_call":
		// A custom tool's input is free text; as a function call it is the one string argument.
		args := translate.AppendString(append([]byte(nil), `{"input":`...), item.Get("input").String())
		t.call(item.Get("call_id").String(), item.Get("name").String(), translate.AppendString(nil, string(append(args, '}'))))
	case "function_call_output", "custom_tool_call_output":
		t.flush()
		t.b = translate.AppendString(append(translate.Sep(t.b), `{"role":"tool","tool_call_id":`...), item.Get("call_id").String())
		t.b = translate.AppendString(append(t.b, `,"content":`...), outputText(item.Get("output")))
		t.b = append(t.b, '}')
	case "additional_tools":
		return t.appendTools(item.Get("tools"))
	case "item_reference":
		return fault.Invalid(p+".type", p+": item_reference needs stored items; this gateway stores none, so send the item itself")
	case "":
		return fault.Invalid(p+".type", p+".type is required")
	default: // reasoning, hosted tools' calls: nothing Chat Completions can carry
		t.drop(typ)
	}
	return nil
}

// call adds a function call to the assistant turn in the making; arguments is a JSON string.
func (t *translator) call(id, name string, arguments []byte) {
	t.pending = true
	if len(arguments) == 0 || arguments[0] != '"' {
		arguments = []byte(`"{}"`)
	}
	t.calls = translate.AppendString(append(translate.Sep(t.calls), `{"id":`...), id)
	t.calls = translate.AppendString(append(t.calls, `,"type":"function","function":{"name":`...), name)
	t.calls = append(append(append(t.calls, `,"arguments":`...), arguments...), `}}`...)
}

// flush writes the assistant turn in the making, if there is one.
func (t *translator) flush() {
	if !t.pending {
		return
	}
	t.b = append(translate.Sep(t.b), `{"role":"assistant","content":`...)
	if t.text == nil {
		t.b = append(t.b, "null"...)
	} else {
		t.b = append(t.b, t.text...)
	}
	if len(t.calls) > 0 {
		t.b = append(append(append(t.b, `,"tool_calls":[`...), t.calls...), ']')
	}
	t.b = append(t.b, '}')
	t.text, t.calls, t.pending = nil, t.calls[:0], false
}

// message writes a message item. An assistant message waits for the calls that may follow it.
func (t *translator) message(p string, item gjson.Result) error {
	role := item.Get("role").String()
	switch role {
	case "developer":
		role = "system" // not every provider's chat shape knows developer
	case "user", "assistant", "system":
	default:
		return fault.Invalid(p+".role", p+".role must be one of user, assistant, system, developer")
	}
	t.flush()
	content := item.Get("content")
	if role == "assistant" {
		t.pending, t.text = true, translate.AppendString(nil, t.plain(content))
		return nil
	}
	if content.Type == gjson.String {
		t.b = append(append(append(translate.Sep(t.b), `{"role":"`...), role...), `","content":`...)
		t.b = append(translate.AppendString(t.b, content.Str), '}')
		return nil
	}
	if !content.IsArray() {
		return fault.Invalid(p+".content", p+".content must be a string or an array of content parts")
	}
	var parts []byte
	var err error
	content.ForEach(func(k, part gjson.Result) bool {
		pp := p + ".content[" + k.String() + "]"
		switch typ := part.Get("type").String(); typ {
		case "input_text", "output_text", "text":
			parts = translate.AppendString(append(translate.Sep(parts), `{"type":"text","text":`...), part.Get("text").String())
			parts = append(parts, '}')
		case "input_image":
			url := part.Get("image_url")
			if url.Type != gjson.String {
				err = fault.Invalid(pp+".image_url", pp+": an image must come as image_url (a URL or a data URL); file ids need stored files")
				return false
			}
			parts = translate.AppendString(append(translate.Sep(parts), `{"type":"image_url","image_url":{"url":`...), url.Str)
			parts = append(parts, `}}`...)
		default:
			t.drop(typ)
		}
		return true
	})
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		return nil
	}
	if role == "system" { // system content is text only on several providers' wires
		t.b = append(translate.Sep(t.b), `{"role":"system","content":`...)
		t.b = append(translate.AppendString(t.b, t.plain(content)), '}')
		return nil
	}
	t.b = append(append(append(translate.Sep(t.b), `{"role":"`...), role...), `","content":[`...)
	t.b = append(append(t.b, parts...), `]}`...)
	return nil
}

// plain is the text of content, a string or parts.
func (t *translator) plain(content gjson.Result) string {
	if content.Type == gjson.String {
		return content.Str
	}
	var sb strings.Builder
	content.ForEach(func(_, part gjson.Result) bool {
		if s := part.Get("text"); s.Type == gjson.String {
			if sb.Len() > 0 {
				sb.WriteString("\n\n")
			}
			sb.WriteString(s.Str)
		}
		return true
	})
	return sb.String()
}

// outputText is a tool output, a string or content parts, as text.
func outputText(out gjson.Result) string {
	if out.Type == gjson.String {
		return out.Str
	}
	var sb strings.Builder
	out.ForEach(func(_, part gjson.Result) bool {
		if s := part.Get("text"); s.Type == gjson.String {
			sb.WriteString(s.Str)
		}
		return true
	})
	return sb.String()
}

// appendTools adds the function tools of tools (namespaces' functions included); hosted and
// custom tools cannot cross and are dropped.
func (t *translator) appendTools(tools gjson.Result) error {
	if !tools.Exists() || tools.Type == gjson.Null {
		return nil
	}
	if !tools.IsArray() {
		return fault.Invalid("tools", "tools must be an array")
	}
	var err error
	tools.ForEach(func(k, tool gjson.Result) bool {
		switch typ := tool.Get("type").String(); typ {
		case "function":
			name := tool.Get("name")
			if name.Type != gjson.String || name.Str == "" {
				err = fault.Invalid("tools["+k.String()+"].name", "tools["+k.String()+"].name is required")
				return false
			}
			t.tools = translate.AppendString(append(translate.Sep(t.tools), `{"type":"function","function":{"name":`...), name.Str)
			if d := tool.Get("description"); d.Type == gjson.String {
				t.tools = append(append(t.tools, `,"description":`...), d.Raw...)
			}
			if s := tool.Get("parameters"); s.IsObject() {
				t.tools = append(append(t.tools, `,"parameters":`...), s.Raw...)
			}
			if s := tool.Get("strict"); s.Type == gjson.True {
				t.tools = append(t.tools, `,"strict":true`...)
			}
			t.tools = append(t.tools, `}}`...)
		case "namespace":
			err = t.appendTools(tool.Get("tools"))
		default:
			t.drop("tools." + typ)
		}
		return err == nil
	})
	return err
}

// toolChoice writes tool_choice in the Chat Completions form.
func (t *translator) toolChoice(choice gjson.Result) error {
	switch {
	case !choice.Exists() || choice.Type == gjson.Null:
	case choice.Type == gjson.String:
		switch choice.Str {
		case "auto", "none", "required":
			t.b = append(append(t.b, `,"tool_choice":`...), choice.Raw...)
		default:
			return fault.Invalid("tool_choice", `tool_choice must be "auto", "none", "required" or a tool`)
		}
	case choice.Get("type").String() == "function":
		t.b = translate.AppendString(append(t.b, `,"tool_choice":{"type":"function","function":{"name":`...), choice.Get("name").String())
		t.b = append(t.b, `}}`...)
	default:
		t.drop("tool_choice." + choice.Get("type").String())
	}
	return nil
}

// responseFormat writes text.format as response_format.
func (t *translator) responseFormat(format gjson.Result) {
	switch format.Get("type").String() {
	case "json_schema":
		t.b = translate.AppendString(append(t.b, `,"response_format":{"type":"json_schema","json_schema":{"name":`...), format.Get("name").String())
		if s := format.Get("schema"); s.IsObject() {
			t.b = append(append(t.b, `,"schema":`...), s.Raw...)
		}
		if s := format.Get("strict"); s.Type == gjson.True {
			t.b = append(t.b, `,"strict":true`...)
		}
		t.b = append(t.b, `}}`...)
	case "json_object":
		t.b = append(t.b, `,"response_format":{"type":"json_object"}`...)
	}
}
