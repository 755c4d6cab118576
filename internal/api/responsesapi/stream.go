package responsesapi

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/api/chatanswer"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

// events writes the Responses stream for a stream of chat.completion.chunk objects. Codex builds
// its answer from the item events only (output_item.added / .done), so every piece of output is
// an item with its added and done events, and the stream always ends with response.completed or
// response.failed — a stream without either is a disconnect to Codex.
type events struct {
	out *httpapi.SSE
	obj *object
	seq int

	output []byte // the finished items, for response.completed
	items  int    // output items started so far
	open   kind
	itemID string
	text   strings.Builder // the open message's text, or the open call's arguments
	call   chatanswer.ToolCall
	tool   int // the Chat Completions index of the open call
	reason string
	usage  *chatanswer.Usage
	buf    []byte
	// passthrough: the provider's own events went out, ending with its own response.completed.
	passthrough bool
}

type kind uint8

const (
	none kind = iota
	message
	functionCall
)

func newEvents(out *httpapi.SSE, obj *object) *events {
	return &events{out: out, obj: obj, buf: make([]byte, 0, 512)}
}

// head starts an event's JSON: its type and sequence number.
func (e *events) head(typ string) []byte {
	b := translate.AppendString(append(e.buf[:0], `{"type":`...), typ)
	b = strconv.AppendInt(append(b, `,"sequence_number":`...), int64(e.seq), 10)
	e.seq++
	return b
}

func (e *events) send(typ string, b []byte) error {
	e.buf = b[:0]
	return e.out.Event(typ, append(b, '}'))
}

// itemHead adds the item_id and output_index of the open item.
func (e *events) itemHead(typ string) []byte {
	b := translate.AppendString(append(e.head(typ), `,"item_id":`...), e.itemID)
	return strconv.AppendInt(append(b, `,"output_index":`...), int64(e.items-1), 10)
}

// Start sends response.created and response.in_progress.
func (e *events) Start() error {
	for _, typ := range [...]string{"response.created", "response.in_progress"} {
		b := e.obj.appendResponse(append(e.head(typ), `,"response":`...), status{name: "in_progress"}, nil, nil)
		if err := e.send(typ, b); err != nil {
			return err
		}
	}
	return nil
}

// responseEvents are the events that carry the Response object.
var responseEvents = map[string]bool{"response.created": true, "response.in_progress": true, "response.completed": true,
	"response.incomplete": true, "response.failed": true, "response.queued": true}

// native sends one of the provider's own events as it came; the Response objects carry the served
// model's catalog name and the report.
func (e *events) native(data []byte) error {
	e.passthrough = true
	f := gjson.GetManyBytes(data, "type", "sequence_number", "response.id", "response.created_at")
	if f[1].Exists() {
		e.seq = int(f[1].Int()) + 1 // an interruption's response.failed comes next
	}
	if responseEvents[f[0].Str] {
		data = openaiapi.StampReport(data, "response", e.obj.model, e.obj.secureai)
		// An interruption's response.failed is the provider's response too: the SDKs refuse a
		// stream whose response changes identity.
		if f[2].Type == gjson.String {
			e.obj.id = f[2].Str
		}
		if f[3].Type == gjson.Number {
			e.obj.created = f[3].Int()
		}
	}
	return e.out.Event(f[0].Str, data)
}

// Write sends c: a passed-through event as it came, or what a chat chunk adds.
func (e *events) Write(c provider.Chunk) error {
	if c.Native {
		return e.native(c.Data)
	}
	return e.chunk(c.Data)
}

// chunk sends what one chat chunk adds.
func (e *events) chunk(data []byte) error {
	d := chatanswer.ReadChunk(data)
	if d.Usage != nil {
		e.usage = d.Usage
	}
	if d.Finish != "" {
		e.reason = strings.Clone(d.Finish) // kept past the chunk, whose buffer the next one reuses
	}
	if d.Text != "" {
		if e.open != message {
			if err := e.begin(message, "msg_", chatanswer.ToolCall{}); err != nil {
				return err
			}
			b := append(e.itemHead("response.content_part.added"), `,"content_index":0,"part":`...)
			if err := e.send("response.content_part.added", appendTextPart(b, "")); err != nil {
				return err
			}
		}
		e.text.WriteString(d.Text)
		b := translate.AppendString(append(e.itemHead("response.output_text.delta"), `,"content_index":0,"delta":`...), d.Text)
		if err := e.send("response.output_text.delta", append(b, `,"logprobs":[]`...)); err != nil {
			return err
		}
	}
	for _, c := range d.Calls {
		if e.open != functionCall || c.Index != e.tool {
			// Kept until the call's done events: cloned from the chunk, which the next one reuses.
			if err := e.begin(functionCall, "fc_", chatanswer.ToolCall{ID: strings.Clone(c.ID), Name: strings.Clone(c.Name)}); err != nil {
				return err
			}
			e.tool = c.Index
		}
		if c.Arguments == "" {
			continue
		}
		e.text.WriteString(c.Arguments)
		b := translate.AppendString(append(e.itemHead("response.function_call_arguments.delta"), `,"delta":`...), c.Arguments)
		if err := e.send("response.function_call_arguments.delta", b); err != nil {
			return err
		}
	}
	return nil
}

// begin finishes the open item and adds the next, of kind k (a function call's named by call).
func (e *events) begin(k kind, prefix string, call chatanswer.ToolCall) error {
	if err := e.done(); err != nil {
		return err
	}
	e.call = call
	e.open, e.itemID = k, itemID(prefix, e.obj.base(), e.items)
	e.items++
	e.text.Reset()
	b := append(e.head("response.output_item.added"), `,"output_index":`...)
	b = append(strconv.AppendInt(b, int64(e.items-1), 10), `,"item":`...)
	if k == message {
		b = appendMessageItem(b, e.itemID, "in_progress", "")
	} else {
		b = appendCallItem(b, e.itemID, "in_progress", e.call)
	}
	return e.send("response.output_item.added", b)
}

// done sends the done events of the open item, if one is, and keeps the item for the end.
func (e *events) done() error {
	if e.open == none {
		return nil
	}
	e.output = translate.Sep(e.output)
	start := len(e.output)
	switch e.open {
	case message:
		text := e.text.String()
		b := translate.AppendString(append(e.itemHead("response.output_text.done"), `,"content_index":0,"text":`...), text)
		if err := e.send("response.output_text.done", append(b, `,"logprobs":[]`...)); err != nil {
			return err
		}
		b = append(e.itemHead("response.content_part.done"), `,"content_index":0,"part":`...)
		if err := e.send("response.content_part.done", appendTextPart(b, text)); err != nil {
			return err
		}
		e.output = appendMessageItem(e.output, e.itemID, "completed", text)
	case functionCall:
		e.call.Arguments = e.text.String()
		b := translate.AppendString(append(e.itemHead("response.function_call_arguments.done"), `,"name":`...), e.call.Name)
		b = translate.AppendString(append(b, `,"arguments":`...), e.call.Arguments)
		if err := e.send("response.function_call_arguments.done", b); err != nil {
			return err
		}
		e.output = appendCallItem(e.output, e.itemID, "completed", e.call)
	}
	e.open = none
	b := append(e.head("response.output_item.done"), `,"output_index":`...)
	b = append(strconv.AppendInt(b, int64(e.items-1), 10), `,"item":`...)
	b = append(b, e.output[start:]...)
	return e.send("response.output_item.done", b)
}

// Finish ends a whole answer with response.completed (or incomplete, for a length cut).
func (e *events) Finish() error {
	if e.passthrough {
		return nil // the provider's response.completed went out
	}
	if err := e.done(); err != nil {
		return err
	}
	st := statusOf(e.reason)
	typ := "response.completed"
	if st.name == "incomplete" {
		typ = "response.incomplete"
	}
	b := e.obj.appendResponse(append(e.head(typ), `,"response":`...), st, e.output, e.usage)
	return e.send(typ, b)
}

// Fail ends an interrupted answer with response.failed (Codex does not understand an error
// event, and resends the whole request after response.failed).
func (e *events) Fail(message string) error {
	b := e.obj.appendResponse(append(e.head("response.failed"), `,"response":`...), status{name: "failed", errMessage: message}, e.output, e.usage)
	return e.send("response.failed", b)
}
