package bedrock

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

// converse holds what Converse and ConverseStream take beyond the model id. The SDK serialises
// it, so the request is translated into its types rather than into bytes.
type converse struct {
	messages  []types.Message
	system    []types.SystemContentBlock
	inference *types.InferenceConfiguration
	tools     *types.ToolConfiguration
	output    *types.OutputConfig
}

// toConverse turns an OpenAI chat request into Converse's shape; fields Converse has no equivalent
// for are left out.
func toConverse(body []byte) (*converse, error) {
	req := gjson.ParseBytes(body)
	msgs := req.Get("messages")
	if !msgs.IsArray() {
		return nil, translate.Invalid("messages", "messages must be an array")
	}
	c := &converse{}
	usesTools := false
	for i, m := range msgs.Array() {
		param := "messages[" + strconv.Itoa(i) + "]"
		var role types.ConversationRole
		var blocks []types.ContentBlock
		var err error
		switch r := m.Get("role").String(); r {
		case "system", "developer":
			texts, err := texts(m.Get("content"), param)
			if err != nil {
				return nil, err
			}
			for _, t := range texts {
				c.system = append(c.system, &types.SystemContentBlockMemberText{Value: t})
			}
			continue
		case "user":
			role = types.ConversationRoleUser
			blocks, err = userBlocks(m.Get("content"), param)
		case "assistant":
			role = types.ConversationRoleAssistant
			blocks, err = assistantBlocks(m, param)
			usesTools = usesTools || len(m.Get("tool_calls").Array()) > 0
		case "tool":
			role = types.ConversationRoleUser
			blocks, err = toolResult(m, param)
			usesTools = true
		default:
			return nil, translate.Invalid(param+".role", fmt.Sprintf("unsupported message role %q", r))
		}
		if err != nil {
			return nil, err
		}
		if len(blocks) == 0 {
			continue
		}
		// Converse wants user and assistant turns to alternate: consecutive messages of one role
		// (several tool results, say) become one turn.
		if n := len(c.messages); n > 0 && c.messages[n-1].Role == role {
			c.messages[n-1].Content = append(c.messages[n-1].Content, blocks...)
		} else {
			c.messages = append(c.messages, types.Message{Role: role, Content: blocks})
		}
	}
	var err error
	if c.inference, err = inference(req); err != nil {
		return nil, err
	}
	if c.tools, err = toolConfig(req, usesTools); err != nil {
		return nil, err
	}
	if c.output, err = outputConfig(req.Get("response_format")); err != nil {
		return nil, err
	}
	return c, nil
}

// texts returns the text of content, a string or an array of text parts.
func texts(content gjson.Result, param string) ([]string, error) {
	if content.Type == gjson.String {
		if content.Str == "" {
			return nil, nil
		}
		return []string{content.Str}, nil
	}
	var out []string
	for j, p := range content.Array() {
		if p.Get("type").String() != "text" {
			return nil, translate.Invalid(param+".content["+strconv.Itoa(j)+"].type", "only text parts are supported here by provider bedrock")
		}
		if t := p.Get("text").String(); t != "" {
			out = append(out, t)
		}
	}
	return out, nil
}

func userBlocks(content gjson.Result, param string) ([]types.ContentBlock, error) {
	if content.Type == gjson.String {
		if content.Str == "" {
			return nil, nil
		}
		return []types.ContentBlock{&types.ContentBlockMemberText{Value: content.Str}}, nil
	}
	var out []types.ContentBlock
	for j, p := range content.Array() {
		pp := param + ".content[" + strconv.Itoa(j) + "]"
		switch typ := p.Get("type").String(); typ {
		case "text":
			if t := p.Get("text").String(); t != "" {
				out = append(out, &types.ContentBlockMemberText{Value: t})
			}
		case "image_url":
			img, err := image(p.Get("image_url.url").String(), pp+".image_url.url")
			if err != nil {
				return nil, err
			}
			out = append(out, img)
		default:
			return nil, translate.Invalid(pp+".type", fmt.Sprintf("content part type %q is not supported by provider bedrock", typ))
		}
	}
	return out, nil
}

// image decodes a base64 data URL: Converse takes image bytes (or S3 locations), not web URLs.
func image(url, param string) (types.ContentBlock, error) {
	rest, ok := strings.CutPrefix(url, "data:image/")
	if !ok {
		return nil, translate.Invalid(param, "provider bedrock takes images as base64 data URLs (data:image/<png|jpeg|gif|webp>;base64,...) only")
	}
	meta, data, _ := strings.Cut(rest, ",")
	format, isBase64 := strings.CutSuffix(meta, ";base64")
	if format == "jpg" {
		format = "jpeg"
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if !isBase64 || err != nil || (format != "png" && format != "jpeg" && format != "gif" && format != "webp") {
		return nil, translate.Invalid(param, "an image must be a base64 data URL of a png, jpeg, gif or webp image")
	}
	return &types.ContentBlockMemberImage{Value: types.ImageBlock{Format: types.ImageFormat(format), Source: &types.ImageSourceMemberBytes{Value: raw}}}, nil
}

func assistantBlocks(m gjson.Result, param string) ([]types.ContentBlock, error) {
	ts, err := texts(m.Get("content"), param)
	if err != nil {
		return nil, err
	}
	out := make([]types.ContentBlock, 0, len(ts))
	for _, t := range ts {
		out = append(out, &types.ContentBlockMemberText{Value: t})
	}
	for k, c := range m.Get("tool_calls").Array() {
		cp := param + ".tool_calls[" + strconv.Itoa(k) + "]"
		args := c.Get("function.arguments").String()
		if args == "" {
			args = "{}"
		}
		var input map[string]any
		if c.Get("id").String() == "" || c.Get("function.name").String() == "" || json.Unmarshal([]byte(args), &input) != nil {
			return nil, translate.Invalid(cp, "a tool call needs an id, a function name and arguments that are a JSON object")
		}
		out = append(out, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
			ToolUseId: aws.String(c.Get("id").String()),
			Name:      aws.String(c.Get("function.name").String()),
			Input:     document.NewLazyDocument(input),
		}})
	}
	return out, nil
}

func toolResult(m gjson.Result, param string) ([]types.ContentBlock, error) {
	id := m.Get("tool_call_id").String()
	if id == "" {
		return nil, translate.Invalid(param+".tool_call_id", "a tool message needs a tool_call_id")
	}
	ts, err := texts(m.Get("content"), param)
	if err != nil {
		return nil, err
	}
	content := []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: strings.Join(ts, "")}}
	return []types.ContentBlock{&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String(id), Content: content}}}, nil
}

func inference(req gjson.Result) (*types.InferenceConfiguration, error) {
	var ic types.InferenceConfiguration
	set := false
	if v := req.Get("max_completion_tokens"); v.Type == gjson.Number {
		ic.MaxTokens, set = aws.Int32(int32(v.Int())), true
	} else if v := req.Get("max_tokens"); v.Type == gjson.Number {
		ic.MaxTokens, set = aws.Int32(int32(v.Int())), true
	}
	if v := req.Get("temperature"); v.Type == gjson.Number {
		ic.Temperature, set = aws.Float32(float32(v.Float())), true
	}
	if v := req.Get("top_p"); v.Type == gjson.Number {
		ic.TopP, set = aws.Float32(float32(v.Float())), true
	}
	switch stop := req.Get("stop"); {
	case stop.Type == gjson.String:
		ic.StopSequences, set = []string{stop.Str}, true
	case stop.IsArray():
		for _, s := range stop.Array() {
			ic.StopSequences = append(ic.StopSequences, s.String())
		}
		set = true
	}
	if !set {
		return nil, nil
	}
	return &ic, nil
}

// toolConfig translates tools and tool_choice. Converse has no "none" choice: the tools are then
// left out, unless the conversation already uses them (Converse requires the tool configuration
// whenever tool blocks appear), in which case the model is left to choose.
func toolConfig(req gjson.Result, usesTools bool) (*types.ToolConfiguration, error) {
	var tc types.ToolConfiguration
	for i, t := range req.Get("tools").Array() {
		name := t.Get("function.name").String()
		if t.Get("type").String() != "function" || name == "" {
			return nil, translate.Invalid("tools["+strconv.Itoa(i)+"]", "only function tools with a name are supported by provider bedrock")
		}
		schema := map[string]any{"type": "object", "properties": map[string]any{}}
		if p := t.Get("function.parameters"); p.IsObject() {
			if err := json.Unmarshal([]byte(p.Raw), &schema); err != nil {
				return nil, translate.Invalid("tools["+strconv.Itoa(i)+"].function.parameters", "parameters must be a JSON schema object")
			}
		}
		spec := types.ToolSpecification{Name: aws.String(name), InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)}}
		if d := t.Get("function.description"); d.Type == gjson.String {
			spec.Description = aws.String(d.Str)
		}
		tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
	}
	if len(tc.Tools) == 0 {
		return nil, nil
	}
	switch choice := req.Get("tool_choice"); {
	case !choice.Exists(), choice.Type == gjson.String && choice.Str == "auto":
		tc.ToolChoice = &types.ToolChoiceMemberAuto{}
	case choice.Type == gjson.String && choice.Str == "none":
		if !usesTools {
			return nil, nil
		}
	case choice.Type == gjson.String && choice.Str == "required":
		tc.ToolChoice = &types.ToolChoiceMemberAny{}
	case choice.IsObject() && choice.Get("function.name").String() != "":
		tc.ToolChoice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(choice.Get("function.name").String())}}
	default:
		return nil, translate.Invalid("tool_choice", "tool_choice must be auto, none, required or a named function")
	}
	return &tc, nil
}

// outputConfig maps json_schema to Converse's structured output; the schema goes through as the
// raw JSON text Converse takes.
func outputConfig(rf gjson.Result) (*types.OutputConfig, error) {
	switch rf.Get("type").String() {
	case "", "text":
		return nil, nil
	case "json_schema":
		schema := rf.Get("json_schema.schema")
		if !schema.IsObject() {
			return nil, translate.Invalid("response_format.json_schema.schema", "response_format json_schema needs a schema object")
		}
		def := types.JsonSchemaDefinition{Schema: aws.String(schema.Raw)}
		if n := rf.Get("json_schema.name"); n.Type == gjson.String {
			def.Name = aws.String(n.Str)
		}
		return &types.OutputConfig{TextFormat: &types.OutputFormat{Type: types.OutputFormatTypeJsonSchema, Structure: &types.OutputFormatStructureMemberJsonSchema{Value: def}}}, nil
	}
	return nil, translate.Invalid("response_format", "provider bedrock supports response_format text and json_schema only")
}
