package classicapi

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/jsonview"
	"github.com/tidwall/gjson"
)

// Limits and defaults of SPEC section 5.
const (
	MaxMessages        = 100
	MaxContentBytes    = 256 << 10
	DefaultTemperature = 0.7
	MaxTemperature     = 2.0
	DefaultMaxTokens   = 1000
	MaxMaxTokens       = 4000
	maxIDLen           = 256 // conversation_id and user_id
	// ZeroKnowledge is the only index this gateway serves: it has no knowledge bases (RAG).
	ZeroKnowledge = "Zero-Knowledge"
)

// fields are the classic body's members; anything else is refused so a typo (max_token) is
// reported instead of silently ignored.
var fields = [...]string{
	"prompt", "messages", "system_message", "model", "models", "fallback_models", "redundancy", "index",
	"smltp_policy", "temperature", "max_tokens", "stream", "conversation_id", "user_id",
}

const (
	fPrompt = iota
	fMessages
	fSystem
	fModel
	fModels
	fFallbacks
	fRedundancy
	fIndex
	fPolicy
	fTemperature
	fMaxTokens
	fStream
	fConversation
	fUser
)

// Input is a validated classic request: what it asks of the completion service — its Body the
// OpenAI-shaped body built from the classic one — and what only this surface reads.
type Input struct {
	completion.Input
	ConversationID string // "" when the caller sent none
	Index          string
}

// message is one upstream chat message; Content is the caller's JSON string, copied as is.
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// upstream is the OpenAI Chat Completions body built from a classic request.
type upstream struct {
	Model          json.RawMessage `json:"model,omitempty"`
	Models         json.RawMessage `json:"models,omitempty"`
	FallbackModels json.RawMessage `json:"fallback_models,omitempty"`
	Redundancy     json.RawMessage `json:"redundancy,omitempty"`
	Messages       []message       `json:"messages"`
	Temperature    float64         `json:"temperature"`
	MaxTokens      int             `json:"max_tokens"`
	Stream         bool            `json:"stream,omitempty"`
}

// Parse validates a classic body (a JSON object) in one pass and builds its upstream body. The
// chain fields are judged here and carried in Input.Chain; the upstream body keeps them as sent,
// as an OpenAI-surface body does (the provider adapters leave them out).
func Parse(body []byte) (*Input, error) {
	var unknown string
	gjson.Parse(jsonview.String(body)).ForEach(func(k, _ gjson.Result) bool {
		for _, f := range fields {
			if k.Str == f {
				return true
			}
		}
		unknown = strings.Clone(k.Str)
		return false
	})
	if unknown != "" {
		return nil, fault.Invalid(unknown, fmt.Sprintf("%s: unknown field (the classic endpoint accepts: prompt, messages, system_message, model, models, fallback_models, redundancy, index, smltp_policy, temperature, max_tokens, stream, conversation_id, user_id)", unknown))
	}
	var v [len(fields)]gjson.Result
	jsonview.Fields(v[:], jsonview.String(body), fields[:]...)
	for i := range v {
		if v[i].Type == gjson.Null {
			v[i] = gjson.Result{} // null means absent everywhere
		}
	}
	in := &Input{Input: completion.Input{Surface: Surface}}
	up := upstream{Temperature: DefaultTemperature, MaxTokens: DefaultMaxTokens}
	var p error

	if p = parseIndex(v[fIndex], in); p != nil {
		return nil, p
	}
	if up.Messages, p = parseMessages(v[fPrompt], v[fMessages], v[fSystem]); p != nil {
		return nil, p
	}
	if t := v[fTemperature]; t.Exists() {
		if t.Type != gjson.Number {
			return nil, fault.Invalid("temperature", "temperature must be a number (it is clamped to 0–2)")
		}
		up.Temperature = math.Max(0, math.Min(MaxTemperature, t.Num))
	}
	if m := v[fMaxTokens]; m.Exists() {
		if m.Type != gjson.Number || m.Num != math.Trunc(m.Num) || m.Num < 1 {
			return nil, fault.Invalid("max_tokens", "max_tokens must be a positive integer (at most 4000 are used)")
		}
		up.MaxTokens = int(math.Min(m.Num, MaxMaxTokens))
	}
	if s := v[fStream]; s.Exists() {
		if s.Type != gjson.True && s.Type != gjson.False {
			return nil, fault.Invalid("stream", "stream must be a boolean")
		}
		in.Stream, up.Stream = s.Bool(), s.Bool()
	}
	if in.ConversationID, p = optionalString(v[fConversation], "conversation_id"); p != nil {
		return nil, p
	}
	if in.UserID, p = optionalString(v[fUser], "user_id"); p != nil {
		return nil, p
	}
	name, p := optionalString(v[fPolicy], "smltp_policy")
	if p != nil {
		return nil, p
	}
	in.Policy, in.MaxTokens = name, up.MaxTokens
	var err error
	if in.Chain, err = chain.SpecOf(v[fModel], v[fModels], v[fFallbacks], v[fRedundancy]); err != nil {
		return nil, err
	}
	up.Model = raw(v[fModel])
	up.Models = raw(v[fModels])
	up.FallbackModels = raw(v[fFallbacks])
	up.Redundancy = raw(v[fRedundancy])
	if in.Body, err = json.Marshal(up); err != nil {
		// Every raw part came from a valid JSON document, so this is a gateway defect.
		return nil, fmt.Errorf("classic: building the upstream body: %w", err)
	}
	return in, nil
}

func parseIndex(v gjson.Result, in *Input) error {
	if !v.Exists() || (v.Type == gjson.String && v.Str == "") {
		return &fault.Error{K: fault.InvalidRequest, Title: "Index required", Param: "index",
			Message: `index is required: send "index": "Zero-Knowledge"`}
	}
	if v.Type != gjson.String {
		return fault.Invalid("index", "index must be a string")
	}
	if v.Str != ZeroKnowledge {
		return &fault.Error{K: fault.InvalidRequest, Title: "Index not available", Param: "index",
			Message: fmt.Sprintf(`index %q is not available: knowledge bases are not available on this gateway; send "index": "Zero-Knowledge"`, v.Str)}
	}
	in.Index = ZeroKnowledge
	return nil
}

// parseMessages applies the conversation rules and returns the upstream messages, the
// system_message (if any) first and a prompt as one user message.
func parseMessages(prompt, msgs, system gjson.Result) ([]message, error) {
	if prompt.Exists() && msgs.Exists() {
		return nil, fault.Invalid("prompt", "send prompt or messages, not both")
	}
	if !prompt.Exists() && !msgs.Exists() {
		return nil, fault.Invalid("messages", "prompt or messages is required")
	}
	size := 0
	var out []message
	if system.Exists() {
		if system.Type != gjson.String {
			return nil, fault.Invalid("system_message", "system_message must be a string")
		}
		size += len(system.Str)
		out = append(out, message{Role: "system", Content: json.RawMessage(system.Raw)})
	}
	if prompt.Exists() {
		if prompt.Type != gjson.String || prompt.Str == "" {
			return nil, fault.Invalid("prompt", "prompt must be a non-empty string")
		}
		size += len(prompt.Str)
		out = append(out, message{Role: "user", Content: json.RawMessage(prompt.Raw)})
	} else {
		if !msgs.IsArray() {
			return nil, fault.Invalid("messages", "messages must be an array of {role, content} objects")
		}
		items := msgs.Array()
		switch {
		case len(items) == 0:
			return nil, fault.Invalid("messages", "messages must not be empty")
		case len(items) > MaxMessages:
			return nil, fault.Invalid("messages", fmt.Sprintf("at most %d messages are allowed (got %d)", MaxMessages, len(items)))
		}
		for i, m := range items {
			msg, n, p := parseMessage(i, m, system.Exists())
			if p != nil {
				return nil, p
			}
			size += n
			out = append(out, msg)
		}
	}
	if size > MaxContentBytes {
		return nil, fault.Invalid("messages", fmt.Sprintf("message content is limited to %d KB in total (got %d bytes)", MaxContentBytes>>10, size))
	}
	return out, nil
}

func parseMessage(i int, m gjson.Result, hasSystemMessage bool) (message, int, error) {
	field := fmt.Sprintf("messages[%d]", i)
	if !m.IsObject() {
		return message{}, 0, fault.Invalid(field, field+" must be a {role, content} object")
	}
	var bad string
	m.ForEach(func(k, _ gjson.Result) bool {
		if k.Str != "role" && k.Str != "content" {
			bad = k.Str
		}
		return bad == ""
	})
	if bad != "" {
		return message{}, 0, fault.Invalid(field+"."+bad, fmt.Sprintf("%s.%s: unknown field (a message has role and content)", field, bad))
	}
	role, content := m.Get("role"), m.Get("content")
	switch {
	case role.Type != gjson.String || (role.Str != "system" && role.Str != "user" && role.Str != "assistant"):
		return message{}, 0, fault.Invalid(field+".role", field+".role must be one of system, user, assistant")
	case content.Type != gjson.String:
		return message{}, 0, fault.Invalid(field+".content", field+".content must be a string")
	case role.Str == "system" && hasSystemMessage:
		return message{}, 0, fault.Invalid("system_message", "send the system prompt either in system_message or as a system message, not both")
	case role.Str == "system" && i > 0:
		return message{}, 0, fault.Invalid(field+".role", "only one system message is allowed, and only as the first message")
	}
	return message{Role: role.Str, Content: json.RawMessage(content.Raw)}, len(content.Str), nil
}

func optionalString(v gjson.Result, field string) (string, error) {
	if !v.Exists() {
		return "", nil
	}
	if v.Type != gjson.String || v.Str == "" || len(v.Str) > maxIDLen {
		return "", fault.Invalid(field, fmt.Sprintf("%s must be a non-empty string of at most %d characters", field, maxIDLen))
	}
	return strings.Clone(v.Str), nil // kept past the body's view
}

func raw(v gjson.Result) json.RawMessage {
	if !v.Exists() {
		return nil
	}
	return json.RawMessage(v.Raw)
}
