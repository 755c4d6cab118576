package openaiapi

import (
	"fmt"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/tidwall/gjson"
)

// checkMessages validates messages as the OpenAI API does — known roles, content a string or
// parts of the kinds that role takes, tool calls and tool results in their shapes — so a
// malformed request is the caller's 400 naming the field, before any provider sees it, whichever
// provider's translator would have read it. It walks the array without building a slice of it.
func checkMessages(m gjson.Result) error {
	if !m.IsArray() {
		return fault.Invalid("messages", "messages is required: a non-empty array of chat messages")
	}
	var err error
	n := 0
	m.ForEach(func(_, msg gjson.Result) bool {
		err = checkMessage(fmt.Sprintf("messages[%d]", n), msg)
		n++
		return err == nil
	})
	if err == nil && n == 0 {
		err = fault.Invalid("messages", "messages is required: a non-empty array of chat messages")
	}
	return err
}

// partKinds are the content part types each role may send.
var partKinds = map[string][]string{
	"system":    {"text"},
	"developer": {"text"},
	"user":      {"text", "image_url", "input_audio", "file"},
	"assistant": {"text", "refusal"},
	"tool":      {"text"},
}

func checkMessage(field string, msg gjson.Result) error {
	if !msg.IsObject() {
		return fault.Invalid(field, field+" must be an object with a role")
	}
	f := msg.Get("role")
	if f.Type != gjson.String {
		return fault.Invalid(field+".role", field+".role must be a string")
	}
	role := f.Str
	if role == "function" { // deprecated by OpenAI but still accepted there
		role = "tool"
	}
	kinds, known := partKinds[role]
	if !known {
		return fault.Invalid(field+".role", fmt.Sprintf("%s.role %q is not one of system, developer, user, assistant, tool, function", field, fault.Clip(f.Str, 64)))
	}
	content := msg.Get("content")
	toolCalls := msg.Get("tool_calls")
	switch {
	case content.Type == gjson.String:
	case content.IsArray():
		if err := checkParts(field+".content", content, kinds); err != nil {
			return err
		}
	case !content.Exists() || content.Type == gjson.Null:
		// Only an assistant message may go without content, when it calls tools (or refuses).
		if role != "assistant" || !(toolCalls.IsArray() || msg.Get("refusal").Type == gjson.String || msg.Get("function_call").IsObject()) {
			return fault.Invalid(field+".content", field+".content is required for a "+f.Str+" message")
		}
	default:
		return fault.Invalid(field+".content", field+".content must be a string or an array of content parts")
	}
	if toolCalls.Exists() && toolCalls.Type != gjson.Null {
		if role != "assistant" {
			return fault.Invalid(field+".tool_calls", field+".tool_calls is only allowed on assistant messages")
		}
		if err := checkToolCalls(field+".tool_calls", toolCalls); err != nil {
			return err
		}
	}
	if role == "tool" && f.Str == "tool" {
		if id := msg.Get("tool_call_id"); id.Type != gjson.String || id.Str == "" {
			return fault.Invalid(field+".tool_call_id", field+".tool_call_id is required for a tool message: the id of the call it answers")
		}
	}
	if name := msg.Get("name"); name.Exists() && name.Type != gjson.String {
		return fault.Invalid(field+".name", field+".name must be a string")
	}
	return nil
}

func checkParts(field string, parts gjson.Result, kinds []string) error {
	var err error
	i := 0
	parts.ForEach(func(_, p gjson.Result) bool {
		pf := fmt.Sprintf("%s[%d]", field, i)
		i++
		typ := p.Get("type")
		if !p.IsObject() || typ.Type != gjson.String {
			err = fault.Invalid(pf, pf+" must be a content part object with a type")
			return false
		}
		allowed := false
		for _, k := range kinds {
			allowed = allowed || typ.Str == k
		}
		if !allowed {
			err = fault.Invalid(pf+".type", fmt.Sprintf("%s.type %q is not allowed here (allowed: %v)", pf, fault.Clip(typ.Str, 64), kinds))
			return false
		}
		switch typ.Str {
		case "text":
			if p.Get("text").Type != gjson.String {
				err = fault.Invalid(pf+".text", pf+".text must be a string")
			}
		case "refusal":
			if p.Get("refusal").Type != gjson.String {
				err = fault.Invalid(pf+".refusal", pf+".refusal must be a string")
			}
		case "image_url":
			if u := p.Get("image_url"); !u.IsObject() || u.Get("url").Type != gjson.String {
				err = fault.Invalid(pf+".image_url", pf+".image_url must be an object with a url string")
			}
		case "input_audio":
			if a := p.Get("input_audio"); !a.IsObject() || a.Get("data").Type != gjson.String || a.Get("format").Type != gjson.String {
				err = fault.Invalid(pf+".input_audio", pf+".input_audio must be an object with data and format strings")
			}
		case "file":
			if !p.Get("file").IsObject() {
				err = fault.Invalid(pf+".file", pf+".file must be an object")
			}
		}
		return err == nil
	})
	return err
}

func checkToolCalls(field string, calls gjson.Result) error {
	if !calls.IsArray() {
		return fault.Invalid(field, field+" must be an array of tool calls")
	}
	var err error
	i := 0
	calls.ForEach(func(_, c gjson.Result) bool {
		cf := fmt.Sprintf("%s[%d]", field, i)
		i++
		fn := c.Get("function")
		switch {
		case !c.IsObject():
			err = fault.Invalid(cf, cf+" must be a tool call object")
		case c.Get("id").Type != gjson.String || c.Get("id").Str == "":
			err = fault.Invalid(cf+".id", cf+".id is required")
		case c.Get("type").Type != gjson.String || c.Get("type").Str != "function":
			err = fault.Invalid(cf+".type", cf+`.type must be "function"`)
		case !fn.IsObject() || fn.Get("name").Type != gjson.String || fn.Get("name").Str == "":
			err = fault.Invalid(cf+".function.name", cf+".function.name is required")
		case fn.Get("arguments").Type != gjson.String:
			err = fault.Invalid(cf+".function.arguments", cf+".function.arguments must be a string (JSON-encoded arguments)")
		}
		return err == nil
	})
	return err
}
