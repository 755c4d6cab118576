package gemini

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

// buildBody translates an OpenAI chat request into a GenerateContentRequest. Values already valid
// in Gemini's shape (strings, numbers, JSON schemas, tool arguments) are copied as raw JSON;
// fields Gemini has no equivalent for are left out.
func buildBody(body []byte) ([]byte, error) {
	req := gjson.ParseBytes(body)
	msgs := req.Get("messages")
	if !msgs.IsArray() {
		return nil, translate.Invalid("messages", "messages must be an array")
	}
	b := make([]byte, 0, len(body)+256)
	b, sys, err := appendContents(append(b, `{"contents":[`...), msgs.Array())
	if err != nil {
		return nil, err
	}
	b = append(b, ']')
	if len(sys) > 0 {
		b = append(append(append(b, `,"systemInstruction":{"parts":[`...), sys...), "]}"...)
	}
	if b, err = appendGenerationConfig(b, req); err != nil {
		return nil, err
	}
	if b, err = appendTools(b, req); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendContents writes the conversation and returns the system prompt's text parts apart:
// Gemini takes them as systemInstruction.
func appendContents(b []byte, msgs []gjson.Result) (out, sys []byte, err error) {
	names := map[string]string{} // tool call id → function name: Gemini matches results by name
	lastTool := false
	for i, m := range msgs {
		param := "messages[" + strconv.Itoa(i) + "]"
		switch role := m.Get("role").String(); role {
		case "system", "developer":
			if sys, err = appendParts(sys, m.Get("content"), param, false); err != nil {
				return nil, nil, err
			}
		case "tool":
			name, ok := names[m.Get("tool_call_id").String()]
			if !ok {
				return nil, nil, translate.Invalid(param+".tool_call_id", "a tool message must answer a tool call of an earlier assistant message")
			}
			if lastTool {
				// Every result answering one model turn goes into a single content.
				b = append(b[:len(b)-2], ',')
			} else {
				b = append(translate.Sep(b), `{"role":"user","parts":[`...)
			}
			b = translate.AppendString(append(b, `{"functionResponse":{"name":`...), name)
			b = append(appendResponse(append(b, `,"response":`...), m.Get("content")), "}}]}"...)
			lastTool = true
			continue
		case "user", "assistant":
			start := len(b)
			geminiRole := "user"
			if role == "assistant" {
				geminiRole = "model"
			}
			b = append(append(append(translate.Sep(b), `{"role":"`...), geminiRole...), `","parts":[`...)
			open := len(b)
			if b, err = appendParts(b, m.Get("content"), param, role == "user"); err != nil {
				return nil, nil, err
			}
			for k, c := range m.Get("tool_calls").Array() {
				cp := param + ".tool_calls[" + strconv.Itoa(k) + "]"
				name := c.Get("function.name")
				args := c.Get("function.arguments").String()
				if args == "" {
					args = "{}"
				}
				if name.Type != gjson.String || !gjson.Valid(args) || !gjson.Parse(args).IsObject() {
					return nil, nil, translate.Invalid(cp, "a tool call needs a function name and arguments that are a JSON object")
				}
				names[c.Get("id").String()] = name.Str
				b = append(append(translate.Sep(b), `{"functionCall":{"name":`...), name.Raw...)
				b = append(append(append(b, `,"args":`...), args...), "}}"...)
			}
			if len(b) == open {
				b = b[:start] // Gemini rejects a content without parts
				continue
			}
			b = append(b, "]}"...)
		default:
			return nil, nil, translate.Invalid(param+".role", fmt.Sprintf("unsupported message role %q", role))
		}
		lastTool = false
	}
	return b, sys, nil
}

// appendResponse writes a tool result as functionResponse.response, which must be an object: a
// JSON object result is passed as is, anything else goes under "output" as the API documents.
func appendResponse(b []byte, content gjson.Result) []byte {
	if content.Type == gjson.String && gjson.Valid(content.Str) && gjson.Parse(content.Str).IsObject() {
		return append(b, content.Str...)
	}
	b = append(b, `{"output":`...)
	if content.Type == gjson.String {
		b = append(b, content.Raw...)
	} else {
		var text strings.Builder
		for _, p := range content.Array() {
			text.WriteString(p.Get("text").String())
		}
		b = translate.AppendString(b, text.String())
	}
	return append(b, '}')
}

// appendParts writes content (a string or an array of parts) as comma-separated Gemini parts.
func appendParts(b []byte, content gjson.Result, param string, images bool) ([]byte, error) {
	return translate.AppendParts(b, content, param, "gemini", images, appendText, appendImage)
}

func appendText(b []byte, t gjson.Result) []byte {
	return append(append(append(b, `{"text":`...), t.Raw...), '}')
}

// imageTypes maps the extensions of image URLs Gemini can fetch to the MIME type it needs.
var imageTypes = map[string]string{".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp", ".gif": "image/gif", ".heic": "image/heic", ".heif": "image/heif"}

func appendImage(b []byte, url, param string) ([]byte, error) {
	img, err := translate.ReadImage(url, param)
	if err != nil {
		return nil, err
	}
	if img.URL == "" {
		b = translate.AppendString(append(b, `{"inlineData":{"mimeType":`...), img.MediaType)
		return append(translate.AppendString(append(b, `,"data":`...), img.Data), "}}"...), nil
	}
	// fileData needs a MIME type that an OpenAI image part does not carry: take it from the URL's
	// extension.
	rawPath, _, _ := strings.Cut(url, "?")
	mimeType, ok := imageTypes[strings.ToLower(path.Ext(rawPath))]
	if !ok {
		return nil, translate.Invalid(param, "provider gemini needs an image URL ending in .png, .jpg, .jpeg, .webp, .gif, .heic or .heif, or a base64 data URL")
	}
	b = translate.AppendString(append(b, `{"fileData":{"mimeType":`...), mimeType)
	return append(translate.AppendString(append(b, `,"fileUri":`...), url), "}}"...), nil
}

func appendGenerationConfig(b []byte, req gjson.Result) ([]byte, error) {
	start := len(b)
	b = append(b, `,"generationConfig":{`...)
	open := len(b)
	field := func(name string, v gjson.Result) {
		if len(b) > open {
			b = append(b, ',')
		}
		b = append(append(append(append(b, '"'), name...), `":`...), v.Raw...)
	}
	if v := req.Get("temperature"); v.Type == gjson.Number {
		field("temperature", v)
	}
	if v := req.Get("top_p"); v.Type == gjson.Number {
		field("topP", v)
	}
	if v := req.Get("max_completion_tokens"); v.Type == gjson.Number {
		field("maxOutputTokens", v)
	} else if v := req.Get("max_tokens"); v.Type == gjson.Number {
		field("maxOutputTokens", v)
	}
	switch stop := req.Get("stop"); {
	case stop.Type == gjson.String:
		field("stopSequences", gjson.Result{Raw: "[" + stop.Raw + "]"})
	case stop.IsArray():
		field("stopSequences", stop)
	}
	switch rf := req.Get("response_format"); rf.Get("type").String() {
	case "", "text":
	case "json_object":
		field("responseMimeType", gjson.Result{Raw: `"application/json"`})
	case "json_schema":
		schema := rf.Get("json_schema.schema")
		if !schema.IsObject() {
			return nil, translate.Invalid("response_format.json_schema.schema", "response_format json_schema needs a schema object")
		}
		field("responseMimeType", gjson.Result{Raw: `"application/json"`})
		field("responseJsonSchema", schema)
	default:
		return nil, translate.Invalid("response_format.type", "provider gemini supports response_format text, json_object and json_schema")
	}
	if len(b) == open {
		return b[:start], nil
	}
	return append(b, '}'), nil
}

func appendTools(b []byte, req gjson.Result) ([]byte, error) {
	tools := req.Get("tools")
	if !tools.IsArray() || len(tools.Array()) == 0 {
		return b, nil
	}
	b = append(b, `,"tools":[{"functionDeclarations":[`...)
	for i, t := range tools.Array() {
		name := t.Get("function.name")
		if t.Get("type").String() != "function" || name.Type != gjson.String {
			return nil, translate.Invalid("tools["+strconv.Itoa(i)+"]", "only function tools with a name are supported by provider gemini")
		}
		b = append(append(translate.Sep(b), `{"name":`...), name.Raw...)
		if d := t.Get("function.description"); d.Type == gjson.String {
			b = append(append(b, `,"description":`...), d.Raw...)
		}
		// parametersJsonSchema takes JSON Schema as OpenAI tools write it; "parameters" would
		// reject keywords outside Gemini's OpenAPI subset, such as additionalProperties.
		if p := t.Get("function.parameters"); p.IsObject() {
			b = append(append(b, `,"parametersJsonSchema":`...), p.Raw...)
		}
		b = append(b, '}')
	}
	b = append(b, "]}]"...)

	switch choice := req.Get("tool_choice"); {
	case !choice.Exists():
	case choice.Type == gjson.String && choice.Str == "auto":
		b = append(b, `,"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}`...)
	case choice.Type == gjson.String && choice.Str == "none":
		b = append(b, `,"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}`...)
	case choice.Type == gjson.String && choice.Str == "required":
		b = append(b, `,"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}`...)
	case choice.IsObject() && choice.Get("function.name").Type == gjson.String:
		b = append(append(b, `,"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":[`...), choice.Get("function.name").Raw...)
		b = append(b, "]}}"...)
	default:
		return nil, translate.Invalid("tool_choice", "tool_choice must be auto, none, required or a named function")
	}
	return b, nil
}
