package messagesapi

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/jsonview"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

// request is a Messages request read and translated: what the completion runs, and what the
// answer must say of it.
type request struct {
	in      completion.Input
	dropped []string // what could not cross to the Chat Completions shape, for the report
}

// read validates body as a Messages request and translates it into the Chat Completions body
// every attempt of the chain translates afresh for its provider (SPEC 12). What the Messages API
// has and Chat Completions lacks — thinking blocks and their signatures, cache_control, server
// tools, output_config, context_management — is dropped and named in the report: one rule for
// everything that cannot cross, never a 500.
func read(body []byte) (*request, error) {
	var f [16]gjson.Result
	jsonview.Fields(f[:], jsonview.String(body), "messages", "system", "max_tokens", "stream", "temperature",
		"top_p", "stop_sequences", "tools", "tool_choice", "model", "models", "fallback_models", "redundancy",
		"smltp_policy", "user_id", "fallbacks")
	msgs, system, maxTokens, stream := f[0], f[1], f[2], f[3]
	if !msgs.IsArray() || len(msgs.Array()) == 0 {
		return nil, fault.Invalid("messages", "messages is required: a non-empty array of messages")
	}
	if maxTokens.Type != gjson.Number || maxTokens.Num < 1 || maxTokens.Num != float64(int64(maxTokens.Num)) {
		return nil, fault.Invalid("max_tokens", "max_tokens is required: an integer of at least 1")
	}
	if stream.Exists() && stream.Type != gjson.True && stream.Type != gjson.False && stream.Type != gjson.Null {
		return nil, fault.Invalid("stream", "stream must be a boolean")
	}
	for i, name := range [...]string{4: "temperature", 5: "top_p"} {
		if v := f[i]; name != "" && v.Exists() && v.Type != gjson.Null && (v.Type != gjson.Number || v.Num < 0 || v.Num > 1) {
			return nil, fault.Invalid(name, name+" must be a number between 0 and 1")
		}
	}
	spec, err := chain.SpecOf(f[9], f[10], f[11], f[12])
	if err == nil {
		err = spec.LiteLLMFallbacks(f[15])
	}
	if err != nil {
		return nil, err
	}
	t := translator{b: make([]byte, 0, len(body)+256)}
	t.b = append(t.b, `{"messages":[`...)
	if err := t.system(system); err != nil {
		return nil, err
	}
	for i, m := range msgs.Array() {
		if err := t.message(i, m); err != nil {
			return nil, err
		}
	}
	t.b = append(t.b, ']')
	t.b = strconv.AppendInt(append(t.b, `,"max_tokens":`...), int64(maxTokens.Num), 10)
	for _, v := range [...]struct {
		name string
		val  gjson.Result
	}{{"temperature", f[4]}, {"top_p", f[5]}} {
		if v.val.Type == gjson.Number {
			t.b = append(append(append(append(t.b, ',', '"'), v.name...), `":`...), v.val.Raw...)
		}
	}
	if s := f[6]; s.IsArray() && len(s.Array()) > 0 {
		t.b = append(append(t.b, `,"stop":`...), s.Raw...)
	}
	if err := t.tools(f[7], f[8]); err != nil {
		return nil, err
	}
	if stream.Type == gjson.True {
		t.b = append(t.b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	t.b = append(t.b, '}')
	for _, name := range [...]string{"thinking", "output_config", "context_management", "top_k", "container", "mcp_servers", "service_tier"} {
		if gjson.GetBytes(body, name).Exists() {
			t.drop(name)
		}
	}
	policy, userID := f[13], f[14]
	for _, v := range [...]struct {
		name string
		val  gjson.Result
	}{{"smltp_policy", policy}, {"user_id", userID}} {
		if v.val.Exists() && v.val.Type != gjson.String && v.val.Type != gjson.Null {
			return nil, fault.Invalid(v.name, v.name+" must be a string")
		}
	}
	return &request{in: completion.Input{Surface: Surface, Body: t.b, Chain: spec, Stream: stream.Type == gjson.True,
		MaxTokens: int(maxTokens.Num), Policy: strings.Clone(policy.Str), UserID: strings.Clone(userID.Str)}, dropped: t.dropped}, nil
}

// translator appends the Chat Completions body.
type translator struct {
	b       []byte
	dropped []string
}

func (t *translator) drop(what string) {
	for _, d := range t.dropped {
		if d == what {
			return
		}
	}
	t.dropped = append(t.dropped, what)
}

// system writes the system prompt, a string or text blocks, as the first message.
func (t *translator) system(s gjson.Result) error {
	switch {
	case !s.Exists() || s.Type == gjson.Null:
		return nil
	case s.Type == gjson.String:
		t.b = translate.AppendString(append(t.b, `{"role":"system","content":`...), s.Str)
		t.b = append(t.b, '}')
		return nil
	case s.IsArray():
		text, err := t.text("system", s)
		if err != nil {
			return err
		}
		t.b = translate.AppendString(append(t.b, `{"role":"system","content":`...), text)
		t.b = append(t.b, '}')
		return nil
	}
	return fault.Invalid("system", "system must be a string or an array of text blocks")
}

// text joins the text blocks of content (a string or blocks); blocks of another type are
// refused, as Anthropic refuses them where only text is allowed.
func (t *translator) text(param string, content gjson.Result) (string, error) {
	if content.Type == gjson.String {
		return content.Str, nil
	}
	if !content.IsArray() {
		return "", fault.Invalid(param, param+" must be a string or an array of content blocks")
	}
	var sb strings.Builder
	var err error
	content.ForEach(func(k, blk gjson.Result) bool {
		p := param + "[" + k.String() + "]"
		switch blk.Get("type").String() {
		case "text":
			if sb.Len() > 0 {
				sb.WriteString("\n\n")
			}
			sb.WriteString(blk.Get("text").String())
			if blk.Get("cache_control").Exists() {
				t.drop("cache_control")
			}
		default:
			err = fault.Invalid(p+".type", fmt.Sprintf("%s.type must be \"text\" here", p))
		}
		return err == nil
	})
	return sb.String(), err
}

// message writes one Messages message as one or more chat messages: a user turn's tool results
// become tool messages (before the rest of the turn, as the calls they answer came just before),
// an assistant turn's tool_use blocks its tool_calls.
func (t *translator) message(i int, m gjson.Result) error {
	param := "messages[" + strconv.Itoa(i) + "]"
	if !m.IsObject() {
		return fault.Invalid(param, param+" must be an object with a role and content")
	}
	role, content := m.Get("role").String(), m.Get("content")
	if role != "user" && role != "assistant" && role != "system" {
		return fault.Invalid(param+".role", param+`.role must be "user" or "assistant"`)
	}
	if role == "system" { // Claude Code sends its environment as a system message in the conversation
		text, err := t.text(param+".content", content)
		if err != nil {
			return err
		}
		t.b = translate.AppendString(append(translate.Sep(t.b), `{"role":"system","content":`...), text)
		t.b = append(t.b, '}')
		return nil
	}
	if content.Type == gjson.String {
		t.b = append(translate.Sep(t.b), `{"role":"`...)
		t.b = translate.AppendString(append(append(t.b, role...), `","content":`...), content.Str)
		t.b = append(t.b, '}')
		return nil
	}
	if !content.IsArray() {
		return fault.Invalid(param+".content", param+".content must be a string or an array of content blocks")
	}
	var parts, calls []byte
	var err error
	content.ForEach(func(k, blk gjson.Result) bool {
		p := param + ".content[" + k.String() + "]"
		if blk.Get("cache_control").Exists() {
			t.drop("cache_control")
		}
		switch typ := blk.Get("type").String(); typ {
		case "text":
			parts = translate.AppendString(append(translate.Sep(parts), `{"type":"text","text":`...), blk.Get("text").String())
			parts = append(parts, '}')
		case "image":
			var url string
			if url, err = imageURL(p, blk.Get("source")); err == nil {
				parts = translate.AppendString(append(translate.Sep(parts), `{"type":"image_url","image_url":{"url":`...), url)
				parts = append(parts, `}}`...)
			}
		case "tool_use":
			if role != "assistant" {
				err = fault.Invalid(p+".type", p+": tool_use blocks belong to assistant messages")
				break
			}
			calls = translate.AppendString(append(translate.Sep(calls), `{"id":`...), blk.Get("id").String())
			calls = translate.AppendString(append(calls, `,"type":"function","function":{"name":`...), blk.Get("name").String())
			calls = append(append(calls, `,"arguments":`...), translate.Arguments(blk.Get("input"))...)
			calls = append(calls, `}}`...)
		case "tool_result":
			if role != "user" {
				err = fault.Invalid(p+".type", p+": tool_result blocks belong to user messages")
				break
			}
			err = t.toolResult(p, blk)
		case "thinking", "redacted_thinking":
			t.drop(typ)
		case "":
			err = fault.Invalid(p+".type", p+".type is required")
		default:
			t.drop(typ)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if len(parts) == 0 && len(calls) == 0 {
		return nil // a turn of tool results only (or of blocks that could not cross)
	}
	t.b = append(append(append(translate.Sep(t.b), `{"role":"`...), role...), `","content":`...)
	if len(parts) == 0 {
		t.b = append(t.b, "null"...)
	} else {
		t.b = append(append(append(t.b, '['), parts...), ']')
	}
	if len(calls) > 0 {
		t.b = append(append(append(t.b, `,"tool_calls":[`...), calls...), ']')
	}
	t.b = append(t.b, '}')
	return nil
}

// toolResult writes a tool_result block as a tool message: its content's text (an error result
// says so, since Chat Completions has no is_error).
func (t *translator) toolResult(p string, blk gjson.Result) error {
	content := blk.Get("content")
	var text string
	switch {
	case !content.Exists() || content.Type == gjson.Null:
	case content.Type == gjson.String:
		text = content.Str
	case content.IsArray():
		var sb strings.Builder
		content.ForEach(func(_, c gjson.Result) bool {
			if c.Get("type").String() == "text" {
				if sb.Len() > 0 {
					sb.WriteString("\n")
				}
				sb.WriteString(c.Get("text").String())
			} else {
				t.drop("tool_result." + c.Get("type").String())
			}
			return true
		})
		text = sb.String()
	default:
		return fault.Invalid(p+".content", p+".content must be a string or an array of content blocks")
	}
	if blk.Get("is_error").Bool() {
		text = "Error: " + text
	}
	t.b = translate.AppendString(append(translate.Sep(t.b), `{"role":"tool","tool_call_id":`...), blk.Get("tool_use_id").String())
	t.b = translate.AppendString(append(t.b, `,"content":`...), text)
	t.b = append(t.b, '}')
	return nil
}

// imageURL is an image block's source as the URL Chat Completions takes (a data URL for base64).
func imageURL(p string, src gjson.Result) (string, error) {
	switch src.Get("type").String() {
	case "base64":
		return "data:" + src.Get("media_type").String() + ";base64," + src.Get("data").String(), nil
	case "url":
		return src.Get("url").String(), nil
	}
	return "", fault.Invalid(p+".source.type", p+`.source.type must be "base64" or "url"`)
}

// tools writes the client tools as function tools and the tool choice; server tools (a block
// with a type, e.g. web_search_20250305) cannot cross and are dropped.
func (t *translator) tools(tools, choice gjson.Result) error {
	if tools.Exists() && tools.Type != gjson.Null && !tools.IsArray() {
		return fault.Invalid("tools", "tools must be an array")
	}
	var out []byte
	var err error
	tools.ForEach(func(k, tool gjson.Result) bool {
		if typ := tool.Get("type").String(); typ != "" && typ != "custom" {
			t.drop("tools." + typ)
			return true
		}
		name := tool.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			err = fault.Invalid("tools["+k.String()+"].name", "tools["+k.String()+"].name is required")
			return false
		}
		out = translate.AppendString(append(translate.Sep(out), `{"type":"function","function":{"name":`...), name.Str)
		if d := tool.Get("description"); d.Type == gjson.String {
			out = append(append(out, `,"description":`...), d.Raw...)
		}
		schema := tool.Get("input_schema")
		if !schema.IsObject() {
			schema = gjson.Result{Type: gjson.JSON, Raw: `{"type":"object","properties":{}}`}
		}
		out = append(append(append(out, `,"parameters":`...), schema.Raw...), `}}`...)
		return true
	})
	if err != nil {
		return err
	}
	if len(out) == 0 {
		return nil // without tools, a tool_choice has nothing to choose
	}
	t.b = append(append(append(t.b, `,"tools":[`...), out...), ']')
	if !choice.Exists() || choice.Type == gjson.Null {
		return nil
	}
	switch choice.Get("type").String() {
	case "auto":
		t.b = append(t.b, `,"tool_choice":"auto"`...)
	case "any":
		t.b = append(t.b, `,"tool_choice":"required"`...)
	case "none":
		t.b = append(t.b, `,"tool_choice":"none"`...)
	case "tool":
		t.b = translate.AppendString(append(t.b, `,"tool_choice":{"type":"function","function":{"name":`...), choice.Get("name").String())
		t.b = append(t.b, `}}`...)
	default:
		return fault.Invalid("tool_choice.type", `tool_choice.type must be one of auto, any, tool, none`)
	}
	if choice.Get("disable_parallel_tool_use").Bool() {
		t.b = append(t.b, `,"parallel_tool_calls":false`...)
	}
	return nil
}
