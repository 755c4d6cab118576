package messagesapi

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

// block is the kind of the content block a stream has open.
type block uint8

const (
	noBlock block = iota
	textBlock
	toolBlock
)

// events writes Anthropic's SSE event sequence for a stream of chat.completion.chunk objects:
// message_start (with the report), ping, each content block's start, deltas and stop,
// message_delta (stop reason, usage) and message_stop; an error event for an interruption.
type events struct {
	out      *httpapi.SSE
	id       string
	model    string
	secureai []byte

	open   block
	index  int    // the open block's index; the next block's is index+1 once one is open
	tool   int    // the Chat Completions index of the open tool call
	blocks int    // blocks started so far
	reason string // the Chat Completions finish_reason, once one came
	usage  chatanswer.Usage
	buf    []byte
	// passthrough: the provider's own events went out, ending with its own message_stop.
	passthrough bool
}

func newEvents(out *httpapi.SSE, id, model string, secureai []byte) *events {
	return &events{out: out, id: id, model: model, secureai: secureai, buf: make([]byte, 0, 512)}
}

func (e *events) send(name string, b []byte) error {
	e.buf = b[:0]
	return e.out.Event(name, b)
}

// Start sends message_start and a ping.
func (e *events) Start() error {
	b := translate.AppendString(append(e.buf, `{"type":"message_start","message":{"id":`...), e.id)
	b = translate.AppendString(append(b, `,"type":"message","role":"assistant","model":`...), e.model)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0},"secureai":`...)
	b = append(append(b, e.secureai...), `}}`...)
	if err := e.send("message_start", b); err != nil {
		return err
	}
	return e.send("ping", append(e.buf, `{"type":"ping"}`...))
}

// native sends one of the provider's own events as it came; its message_start carries the served
// model's catalog name and the report.
func (e *events) native(data []byte) error {
	e.passthrough = true
	typ := gjson.GetBytes(data, "type").String()
	if typ == "message_start" {
		data = openaiapi.StampReport(data, "message", e.model, e.secureai)
	}
	return e.out.Event(typ, data)
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
		e.usage = *d.Usage
	}
	if d.Finish != "" {
		e.reason = strings.Clone(d.Finish) // kept past the chunk, whose buffer the next one reuses
	}
	if d.Text != "" {
		if e.open != textBlock {
			if err := e.begin(textBlock, append(e.buf, `{"type":"text","text":""}`...)); err != nil {
				return err
			}
		}
		b := append(e.delta(), `{"type":"text_delta","text":`...)
		if err := e.send("content_block_delta", append(translate.AppendString(b, d.Text), `}}`...)); err != nil {
			return err
		}
	}
	for _, c := range d.Calls {
		if e.open != toolBlock || c.Index != e.tool {
			e.tool = c.Index
			if err := e.begin(toolBlock, appendToolUse(e.buf, c.ID, c.Name, []byte("{}"))); err != nil {
				return err
			}
		}
		if c.Arguments == "" {
			continue
		}
		b := append(e.delta(), `{"type":"input_json_delta","partial_json":`...)
		if err := e.send("content_block_delta", append(translate.AppendString(b, c.Arguments), `}}`...)); err != nil {
			return err
		}
	}
	return nil
}

// delta starts a content_block_delta of the open block; the delta object follows.
func (e *events) delta() []byte {
	b := strconv.AppendInt(append(e.buf, `{"type":"content_block_delta","index":`...), int64(e.index), 10)
	return append(b, `,"delta":`...)
}

// begin closes the open block and starts the next, of kind k, with its content_block.
func (e *events) begin(k block, contentBlock []byte) error {
	cb := append([]byte(nil), contentBlock...)
	if err := e.stop(); err != nil {
		return err
	}
	e.open, e.index = k, e.blocks
	e.blocks++
	b := strconv.AppendInt(append(e.buf, `{"type":"content_block_start","index":`...), int64(e.index), 10)
	b = append(append(append(b, `,"content_block":`...), cb...), '}')
	return e.send("content_block_start", b)
}

// stop closes the open block, if one is.
func (e *events) stop() error {
	if e.open == noBlock {
		return nil
	}
	e.open = noBlock
	b := strconv.AppendInt(append(e.buf, `{"type":"content_block_stop","index":`...), int64(e.index), 10)
	return e.send("content_block_stop", append(b, '}'))
}

// Finish ends a whole answer.
func (e *events) Finish() error {
	if e.passthrough {
		return nil // the provider's message_stop went out
	}
	if err := e.stop(); err != nil {
		return err
	}
	b := translate.AppendString(append(e.buf, `{"type":"message_delta","delta":{"stop_reason":`...), stopReason(e.reason))
	b = append(b, `,"stop_sequence":null},"usage":`...)
	b = append(appendUsage(b, e.usage, true), '}')
	if err := e.send("message_delta", b); err != nil {
		return err
	}
	return e.send("message_stop", append(e.buf, `{"type":"message_stop"}`...))
}

// Fail ends an interrupted answer with Anthropic's error event: Claude Code then asks again
// without streaming, a new request the chain serves afresh.
func (e *events) Fail(message string) error { return e.failWith("overloaded_error", message) }

// failWith sends the error event of an error of Anthropic's type typ.
func (e *events) failWith(typ, message string) error {
	b := translate.AppendString(append(e.buf, `{"type":"error","error":{"type":`...), typ)
	b = translate.AppendString(append(b, `,"message":`...), message)
	return e.send("error", append(b, `}}`...))
}
