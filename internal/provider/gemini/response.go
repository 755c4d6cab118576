package gemini

import (
	"crypto/rand"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

// translateResponse turns a GenerateContentResponse into a chat.completion.
func translateResponse(raw []byte, model string, created int64) (*provider.Response, error) {
	if !gjson.ValidBytes(raw) {
		return nil, malformed("response")
	}
	r := gjson.ParseBytes(raw)
	cand := r.Get("candidates.0")
	if !cand.Exists() {
		if br := r.Get("promptFeedback.blockReason"); br.Exists() {
			return nil, contentFiltered(br.String())
		}
		return nil, malformed("response")
	}
	var (
		text  translate.Text
		calls []translate.ToolCall
	)
	for _, p := range cand.Get("content.parts").Array() {
		if t := p.Get("text"); t.Type == gjson.String && !p.Get("thought").Bool() {
			text.Add(t)
		} else if fc := p.Get("functionCall"); fc.Exists() {
			calls = append(calls, translate.ToolCall{ID: callID(fc), Name: fc.Get("name").String(), Args: translate.Arguments(fc.Get("args"))})
		}
	}
	u := usage(r.Get("usageMetadata"))
	body := translate.AppendCompletion(make([]byte, 0, len(raw)+256), responseID(r), modelOf(r, model), created, text.Token(), calls,
		finishReason(cand.Get("finishReason").String(), len(calls) > 0), u)
	return &provider.Response{Body: body, Usage: u}, nil
}

// usage counts thinking tokens as completion tokens: Gemini bills them as output but reports
// them apart.
func usage(u gjson.Result) provider.Usage {
	return provider.Usage{
		PromptTokens:     int(u.Get("promptTokenCount").Int() + u.Get("toolUsePromptTokenCount").Int()),
		CompletionTokens: int(u.Get("candidatesTokenCount").Int() + u.Get("thoughtsTokenCount").Int()),
	}
}

func finishReason(reason string, toolCalls bool) string {
	switch reason {
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT":
		return "content_filter"
	}
	if toolCalls {
		return "tool_calls" // Gemini says STOP after a function call
	}
	return "stop"
}

// callID keeps Gemini's call id when it sends one; otherwise it makes one, since OpenAI clients
// need an id to answer the call with.
func callID(fc gjson.Result) string {
	if id := fc.Get("id").String(); id != "" {
		return id
	}
	return "call_" + rand.Text()
}

func responseID(r gjson.Result) string {
	if id := r.Get("responseId").String(); id != "" {
		return id
	}
	return "chatcmpl-" + rand.Text()
}

func modelOf(r gjson.Result, model string) string {
	if m := r.Get("modelVersion").String(); m != "" {
		return m
	}
	return model
}
