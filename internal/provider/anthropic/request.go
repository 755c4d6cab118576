package anthropic

import (
	"fmt"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

// defaultMaxTokens is sent when the caller set no limit: Anthropic requires max_tokens, OpenAI
// does not.
const defaultMaxTokens = 4096

// buildBody translates an OpenAI chat request into a Messages API body. Values that are already
// valid in Anthropic's shape (strings, numbers, JSON schemas, tool arguments) are copied as raw
// JSON. Fields Anthropic has no equivalent for are left out.
func buildBody(body []byte, model string, stream bool) ([]byte, error) {
	req := gjson.ParseBytes(body)
	msgs := req.Get("messages")
	if !msgs.IsArray() {
		return nil, translate.Invalid("messages", "messages must be an array")
	}
	b := make([]byte, 0, len(body)+256)
	b = translate.AppendString(append(b, `{"model":`...), model)
	b = append(b, `,"max_tokens":`...)
	if mt := firstNumber(req, "max_completion_tokens", "max_tokens"); mt.Exists() {
		b = append(b, mt.Raw...)
	} else {
		b = strconv.AppendInt(b, defaultMaxTokens, 10)
	}
	b, sys, err := appendMessages(append(b, `,"messages":[`...), msgs.Array())
	if err != nil {
		return nil, err
	}
	b = append(b, ']')
	if len(sys) > 0 {
		b = append(append(append(b, `,"system":[`...), sys...), ']')
	}
	if t := req.Get("temperature"); t.Type == gjson.Number {
		// Anthropic accepts 0–1 where OpenAI accepts 0–2; clamping keeps a failover chain from
		// ending in a 400 for a value the first model accepted.
		if t.Float() > 1 {
			b = append(b, `,"temperature":1`...)
		} else {
			b = append(append(b, `,"temperature":`...), t.Raw...)
		}
	}
	if p := req.Get("top_p"); p.Type == gjson.Number {
		b = append(append(b, `,"top_p":`...), p.Raw...)
	}
	switch stop := req.Get("stop"); {
	case stop.Type == gjson.String:
		b = append(append(append(b, `,"stop_sequences":[`...), stop.Raw...), ']')
	case stop.IsArray():
		b = append(append(b, `,"stop_sequences":`...), stop.Raw...)
	}
	if b, err = appendTools(b, req); err != nil {
		return nil, err
	}
	if b, err = appendResponseFormat(b, req.Get("response_format")); err != nil {
		return nil, err
	}
	if stream {
		b = append(b, `,"stream":true`...)
	}
	return append(b, '}'), nil
}

// appendMessages writes the conversation and returns the system prompt's text blocks apart:
// Anthropic takes the system prompt as a top-level field, OpenAI as messages anywhere.
func appendMessages(b []byte, msgs []gjson.Result) (out, sys []byte, err error) {
	lastTool := false
	for i, m := range msgs {
		param := "messages[" + strconv.Itoa(i) + "]"
		role := m.Get("role").String()
		switch role {
		case "system", "developer":
			if sys, err = appendBlocks(sys, m.Get("content"), param, false); err != nil {
				return nil, nil, err
			}
			continue
		case "tool":
			id := m.Get("tool_call_id")
			if id.Type != gjson.String {
				return nil, nil, translate.Invalid(param+".tool_call_id", "a tool message needs a tool_call_id")
			}
			if lastTool {
				// Every result answering one assistant turn goes into a single user message.
				b = append(b[:len(b)-2], ',')
			} else {
				b = append(translate.Sep(b), `{"role":"user","content":[`...)
			}
			b = append(append(b, `{"type":"tool_result","tool_use_id":`...), id.Raw...)
			if c := m.Get("content"); c.Type == gjson.String {
				b = append(append(b, `,"content":`...), c.Raw...)
			} else if c.IsArray() {
				if b, err = appendBlocks(append(b, `,"content":[`...), c, param, true); err != nil {
					return nil, nil, err
				}
				b = append(b, ']')
			}
			b = append(b, "}]}"...)
			lastTool = true
			continue
		case "user", "assistant":
		default:
			return nil, nil, translate.Invalid(param+".role", fmt.Sprintf("unsupported message role %q", role))
		}
		lastTool = false
		start := len(b)
		b = append(translate.Sep(b), `{"role":"`...)
		b = append(append(b, role...), `","content":[`...)
		open := len(b)
		if b, err = appendBlocks(b, m.Get("content"), param, role == "user"); err != nil {
			return nil, nil, err
		}
		if role == "assistant" {
			if b, err = appendToolUses(b, m.Get("tool_calls"), param); err != nil {
				return nil, nil, err
			}
		}
		if len(b) == open && role == "assistant" {
			b = b[:start] // an empty assistant turn: Anthropic rejects empty content
			continue
		}
		b = append(b, "]}"...)
	}
	return b, sys, nil
}

// appendBlocks writes content (a string or an array of parts) as comma-separated content blocks.
func appendBlocks(b []byte, content gjson.Result, param string, images bool) ([]byte, error) {
	if content.Type != gjson.String && !content.IsArray() {
		return b, nil // no content, or none in a shape OpenAI documents: nothing to write
	}
	return translate.AppendParts(b, content, param, "anthropic", images, appendText, appendImage)
}

func appendText(b []byte, t gjson.Result) []byte {
	return append(append(append(b, `{"type":"text","text":`...), t.Raw...), '}')
}

func appendImage(b []byte, url, param string) ([]byte, error) {
	img, err := translate.ReadImage(url, param)
	if err != nil {
		return nil, err
	}
	if img.URL != "" {
		return append(translate.AppendString(append(b, `{"type":"image","source":{"type":"url","url":`...), img.URL), "}}"...), nil
	}
	b = translate.AppendString(append(b, `{"type":"image","source":{"type":"base64","media_type":`...), img.MediaType)
	return append(translate.AppendString(append(b, `,"data":`...), img.Data), "}}"...), nil
}

func appendToolUses(b []byte, calls gjson.Result, param string) ([]byte, error) {
	for k, c := range calls.Array() {
		cp := param + ".tool_calls[" + strconv.Itoa(k) + "]"
		id, name := c.Get("id"), c.Get("function.name")
		if id.Type != gjson.String || name.Type != gjson.String {
			return nil, translate.Invalid(cp, "a tool call needs an id and a function name")
		}
		args := c.Get("function.arguments").String()
		if args == "" {
			args = "{}"
		} else if !gjson.Valid(args) || !gjson.Parse(args).IsObject() {
			return nil, translate.Invalid(cp+".function.arguments", "tool call arguments must be a JSON object")
		}
		b = append(append(translate.Sep(b), `{"type":"tool_use","id":`...), id.Raw...)
		b = append(append(b, `,"name":`...), name.Raw...)
		b = append(append(append(b, `,"input":`...), args...), '}')
	}
	return b, nil
}

func appendTools(b []byte, req gjson.Result) ([]byte, error) {
	tools := req.Get("tools")
	if !tools.IsArray() || len(tools.Array()) == 0 {
		return b, nil
	}
	b = append(b, `,"tools":[`...)
	for i, t := range tools.Array() {
		name := t.Get("function.name")
		if t.Get("type").String() != "function" || name.Type != gjson.String {
			return nil, translate.Invalid("tools["+strconv.Itoa(i)+"]", "only function tools with a name are supported by provider anthropic")
		}
		b = append(append(translate.Sep(b), `{"name":`...), name.Raw...)
		if d := t.Get("function.description"); d.Type == gjson.String {
			b = append(append(b, `,"description":`...), d.Raw...)
		}
		schema := `{"type":"object","properties":{}}`
		if p := t.Get("function.parameters"); p.IsObject() {
			schema = p.Raw
		}
		b = append(append(append(b, `,"input_schema":`...), schema...), '}')
	}
	b = append(b, ']')

	choice := req.Get("tool_choice")
	parallel := req.Get("parallel_tool_calls").Type != gjson.False
	var head string
	switch {
	case choice.Type == gjson.String && choice.Str == "auto", !choice.Exists() && !parallel:
		head = `{"type":"auto"`
	case choice.Type == gjson.String && choice.Str == "none":
		return append(b, `,"tool_choice":{"type":"none"}`...), nil
	case choice.Type == gjson.String && choice.Str == "required":
		head = `{"type":"any"`
	case choice.IsObject() && choice.Get("function.name").Type == gjson.String:
		head = `{"type":"tool","name":` + choice.Get("function.name").Raw
	case !choice.Exists():
		return b, nil
	default:
		return nil, translate.Invalid("tool_choice", "tool_choice must be auto, none, required or a named function")
	}
	b = append(append(b, `,"tool_choice":`...), head...)
	if !parallel {
		b = append(b, `,"disable_parallel_tool_use":true`...)
	}
	return append(b, '}'), nil
}

func appendResponseFormat(b []byte, rf gjson.Result) ([]byte, error) {
	switch rf.Get("type").String() {
	case "", "text":
		return b, nil
	case "json_schema":
		schema := rf.Get("json_schema.schema")
		if !schema.IsObject() {
			return nil, translate.Invalid("response_format.json_schema.schema", "response_format json_schema needs a schema object")
		}
		b = append(append(b, `,"output_config":{"format":{"type":"json_schema","schema":`...), schema.Raw...)
		return append(b, "}}"...), nil
	default:
		return nil, translate.Invalid("response_format", "provider anthropic supports response_format text and json_schema only")
	}
}

// firstNumber returns the first of the named fields that holds a number.
func firstNumber(req gjson.Result, names ...string) gjson.Result {
	for _, n := range names {
		if v := req.Get(n); v.Type == gjson.Number {
			return v
		}
	}
	return gjson.Result{}
}
