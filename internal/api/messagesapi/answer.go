package messagesapi

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/api/chatanswer"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

// stopReasons is Anthropic's stop_reason for each Chat Completions finish_reason.
var stopReasons = map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use",
	"function_call": "tool_use", "content_filter": "refusal"}

func stopReason(finish string) string {
	if s, ok := stopReasons[finish]; ok {
		return s
	}
	return "end_turn"
}

// appendMessage appends the message object of a whole answer (a chat.completion) served by model.
func appendMessage(b []byte, id, model string, completion, secureai []byte) []byte {
	a := chatanswer.Read(completion)
	b = translate.AppendString(append(b, `{"id":`...), id)
	b = translate.AppendString(append(b, `,"type":"message","role":"assistant","model":`...), model)
	b = append(b, `,"content":[`...)
	if a.Text != "" || len(a.Calls) == 0 {
		b = translate.AppendString(append(b, `{"type":"text","text":`...), a.Text)
		b = append(b, '}')
	}
	for _, c := range a.Calls {
		b = appendToolUse(translate.Sep(b), c.ID, c.Name, input(c.Arguments))
	}
	b = translate.AppendString(append(b, `],"stop_reason":`...), stopReason(a.Finish))
	b = append(b, `,"stop_sequence":null,"usage":`...)
	b = appendUsage(b, a.Usage, true)
	return append(append(append(b, `,"secureai":`...), secureai...), '}')
}

// appendToolUse appends a tool_use block (a stream starts it with an empty input).
func appendToolUse(b []byte, id, name string, input []byte) []byte {
	b = translate.AppendString(append(b, `{"type":"tool_use","id":`...), toolUseID(id))
	b = translate.AppendString(append(b, `,"name":`...), name)
	return append(append(append(b, `,"input":`...), input...), '}')
}

// toolUseID keeps a call's id (Claude Code sends it back in the tool_result), giving one to a
// model that sent none.
func toolUseID(id string) string {
	if id == "" {
		return "toolu_gateway"
	}
	return id
}

// input is a call's arguments as the tool_use input object; anything but a whole object (an
// answer cut by max_tokens mid-arguments) is {}.
func input(arguments string) []byte {
	if v := gjson.Parse(arguments); gjson.Valid(arguments) && v.IsObject() {
		return []byte(v.Raw)
	}
	return []byte("{}")
}

// appendUsage appends Anthropic's usage object; withInput false leaves input_tokens to the
// message_start that carried it.
func appendUsage(b []byte, u chatanswer.Usage, withInput bool) []byte {
	b = append(b, '{')
	if withInput {
		b = strconv.AppendInt(append(b, `"input_tokens":`...), u.Input-u.Cached, 10)
		b = strconv.AppendInt(append(b, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":`...), u.Cached, 10)
		b = append(b, ',')
	}
	b = strconv.AppendInt(append(b, `"output_tokens":`...), u.Output, 10)
	return append(b, '}')
}
