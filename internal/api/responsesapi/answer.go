package responsesapi

import (
	"strconv"
	"strings"

	"github.com/secureai-gateway/gateway/internal/api/chatanswer"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

// object writes Response objects: the non-streamed answer, and the response that the stream's
// created, in_progress, completed and failed events carry.
type object struct {
	id, model string
	created   int64
	echo      echo
	secureai  []byte
}

// status is a response's status and, for an incomplete one, why.
type status struct {
	name       string // in_progress, completed, incomplete, failed
	incomplete string // max_output_tokens, content_filter
	errMessage string // a failed response's error
}

// statusOf is the status of an answer that finished for finish (a Chat Completions finish_reason).
func statusOf(finish string) status {
	switch finish {
	case "length":
		return status{name: "incomplete", incomplete: "max_output_tokens"}
	case "content_filter":
		return status{name: "incomplete", incomplete: "content_filter"}
	}
	return status{name: "completed"}
}

// appendResponse appends the Response object with its output items (already written, comma
// separated) and usage (nil: none yet).
func (o *object) appendResponse(b []byte, st status, output []byte, usage *chatanswer.Usage) []byte {
	b = translate.AppendString(append(b, `{"id":`...), o.id)
	b = strconv.AppendInt(append(b, `,"object":"response","created_at":`...), o.created, 10)
	b = translate.AppendString(append(b, `,"status":`...), st.name)
	if st.errMessage != "" {
		b = translate.AppendString(append(b, `,"error":{"code":"server_error","message":`...), st.errMessage)
		b = append(b, '}')
	} else {
		b = append(b, `,"error":null`...)
	}
	if st.incomplete != "" {
		b = translate.AppendString(append(b, `,"incomplete_details":{"reason":`...), st.incomplete)
		b = append(b, '}')
	} else {
		b = append(b, `,"incomplete_details":null`...)
	}
	b = translate.AppendString(append(b, `,"model":`...), o.model)
	b = append(append(append(b, `,"output":[`...), output...), ']')
	e := o.echo
	b = appendOr(append(b, `,"instructions":`...), e.instructions, "null")
	b = appendOr(append(b, `,"max_output_tokens":`...), e.maxOutput, "null")
	b = appendOr(append(b, `,"parallel_tool_calls":`...), e.parallel, "true")
	b = append(b, `,"previous_response_id":null,"store":false`...)
	b = appendOr(append(b, `,"temperature":`...), e.temperature, "null")
	b = appendOr(append(b, `,"top_p":`...), e.topP, "null")
	b = appendOr(append(b, `,"tool_choice":`...), e.toolChoice, `"auto"`)
	b = appendOr(append(b, `,"tools":`...), e.tools, "[]")
	b = appendOr(append(b, `,"text":`...), e.text, `{"format":{"type":"text"}}`)
	b = appendOr(append(b, `,"reasoning":`...), e.reasoning, `{"effort":null,"summary":null}`)
	b = appendOr(append(b, `,"user":`...), e.user, "null")
	b = appendOr(append(b, `,"metadata":`...), e.metadata, "{}")
	b = append(b, `,"truncation":"disabled","usage":`...)
	if usage == nil {
		b = append(b, "null"...)
	} else {
		b = appendUsage(b, *usage)
	}
	return append(append(append(b, `,"secureai":`...), o.secureai...), '}')
}

// appendOr appends an echoed request member as the caller wrote it, or otherwise when it sent
// none. Its line breaks are left out: in valid JSON they can only be whitespace between tokens,
// and one inside an event's data line would split the event (a pretty-printed request would
// corrupt every Response object of its stream).
func appendOr(b []byte, raw, otherwise string) []byte {
	if raw == "" {
		return append(b, otherwise...)
	}
	for {
		i := strings.IndexAny(raw, "\r\n")
		if i < 0 {
			return append(b, raw...)
		}
		b, raw = append(b, raw[:i]...), raw[i+1:]
	}
}

func appendUsage(b []byte, u chatanswer.Usage) []byte {
	b = strconv.AppendInt(append(b, `{"input_tokens":`...), u.Input, 10)
	b = strconv.AppendInt(append(b, `,"input_tokens_details":{"cached_tokens":`...), u.Cached, 10)
	b = strconv.AppendInt(append(b, `},"output_tokens":`...), u.Output, 10)
	b = strconv.AppendInt(append(b, `,"output_tokens_details":{"reasoning_tokens":`...), u.Reasoning, 10)
	return append(strconv.AppendInt(append(b, `},"total_tokens":`...), u.Input+u.Output, 10), '}')
}

// appendMessageItem appends an assistant message output item holding text.
func appendMessageItem(b []byte, id, st, text string) []byte {
	b = translate.AppendString(append(b, `{"type":"message","id":`...), id)
	b = translate.AppendString(append(b, `,"status":`...), st)
	b = append(b, `,"role":"assistant","content":[`...)
	if st == "completed" {
		b = appendTextPart(b, text)
	}
	return append(b, `]}`...)
}

func appendTextPart(b []byte, text string) []byte {
	b = translate.AppendString(append(b, `{"type":"output_text","text":`...), text)
	return append(b, `,"annotations":[],"logprobs":[]}`...)
}

// appendCallItem appends a function_call output item.
func appendCallItem(b []byte, id, st string, c chatanswer.ToolCall) []byte {
	b = translate.AppendString(append(b, `{"type":"function_call","id":`...), id)
	b = translate.AppendString(append(b, `,"call_id":`...), c.ID)
	b = translate.AppendString(append(b, `,"name":`...), c.Name)
	b = translate.AppendString(append(b, `,"arguments":`...), c.Arguments)
	b = translate.AppendString(append(b, `,"status":`...), st)
	return append(b, '}')
}

// itemID is the id of the answer's n-th output item.
func itemID(prefix, base string, n int) string {
	return prefix + strconv.Itoa(n) + "_" + base
}

// appendWhole appends the Response object of a whole answer (a chat.completion).
func (o *object) appendWhole(b []byte, completion []byte) []byte {
	a := chatanswer.Read(completion)
	var output []byte
	n := 0
	if a.Text != "" || len(a.Calls) == 0 {
		output = appendMessageItem(output, itemID("msg_", o.base(), n), "completed", a.Text)
		n++
	}
	for _, c := range a.Calls {
		output = appendCallItem(translate.Sep(output), itemID("fc_", o.base(), n), "completed", c)
		n++
	}
	return o.appendResponse(b, statusOf(a.Finish), output, &a.Usage)
}

// base is what the answer's item ids are made of.
func (o *object) base() string { return o.id[len("resp_"):] }
