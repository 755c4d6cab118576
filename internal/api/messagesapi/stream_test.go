package messagesapi

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/testkit/wirecheck"
)

// streamOf runs chunks (chat.completion.chunk objects) through the event writer as the handler
// does, ending the answer with finish (or fail, when failMessage is set).
func streamOf(t *testing.T, chunks []string, failMessage string) []wirecheck.Event {
	t.Helper()
	rec := httptest.NewRecorder()
	ev := newEvents(httpapi.StartSSE(rec), "msg_abc", "fake/ok", []byte(report))
	if err := ev.Start(); err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if err := ev.chunk([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if failMessage != "" {
		_ = ev.Fail(failMessage)
	} else if err := ev.Finish(); err != nil {
		t.Fatal(err)
	}
	return wirecheck.ParseSSE(t, rec.Body.String())
}

// Chunks of a chat stream, as an OpenAI-compatible provider sends them.
func roleChunk() string { return chunk(`{"role":"assistant","content":""}`, "") }
func textChunk(s string) string {
	return chunk(`{"content":`+quote(s)+`}`, "")
}
func callStart(index int, id, name string) string {
	return chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, index, id, name), "")
}
func callArgs(index int, args string) string {
	return chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, index, quote(args)), "")
}
func finishChunk(reason string) string { return chunk(`{}`, reason) }
func usageChunk(in, out int) string {
	return fmt.Sprintf(`{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, in, out, in+out)
}

func chunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = quote(finish)
	}
	return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestStreamIsAnthropicsEventSequence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		names  []string
		want   map[int]want // checks of the frame at each index
	}{
		{"text", []string{roleChunk(), textChunk("Hel"), textChunk("lo."), finishChunk("stop"), usageChunk(12, 3)},
			[]string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"},
			map[int]want{
				0: {"message": `{"id":"msg_abc","type":"message","role":"assistant","model":"fake/ok","content":[],"stop_reason":null,"stop_sequence":null,` +
					`"usage":{"input_tokens":0,"output_tokens":0},"secureai":` + report + `}`},
				2: {"index": `0`, "content_block": `{"type":"text","text":""}`},
				3: {"index": `0`, "delta": `{"type":"text_delta","text":"Hel"}`},
				4: {"index": `0`, "delta": `{"type":"text_delta","text":"lo."}`},
				5: {"index": `0`},
				6: {"delta": `{"stop_reason":"end_turn","stop_sequence":null}`,
					"usage": `{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}`},
			}},
		{"text then a tool call", []string{roleChunk(), textChunk("Reading."), callStart(0, "call_1", "Read"),
			callArgs(0, `{"file_path":`), callArgs(0, `"a.txt"}`), finishChunk("tool_calls"), usageChunk(12, 9)},
			[]string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop",
				"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"},
			map[int]want{
				2: {"index": `0`, "content_block.type": `"text"`},
				4: {"index": `0`},
				5: {"index": `1`, "content_block": `{"type":"tool_use","id":"call_1","name":"Read","input":{}}`},
				6: {"index": `1`, "delta": `{"type":"input_json_delta","partial_json":"{\"file_path\":"}`},
				7: {"index": `1`, "delta": `{"type":"input_json_delta","partial_json":"\"a.txt\"}"}`},
				8: {"index": `1`},
				9: {"delta.stop_reason": `"tool_use"`, "usage.output_tokens": `9`},
			}},
		{"two tool calls are two tool_use blocks", []string{roleChunk(), callStart(0, "call_1", "Read"), callArgs(0, `{"file_path":"a"}`),
			callStart(1, "call_2", "Bash"), callArgs(1, `{"command":"ls"}`), finishChunk("tool_calls"), usageChunk(12, 20)},
			[]string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop",
				"content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"},
			map[int]want{
				2: {"index": `0`, "content_block": `{"type":"tool_use","id":"call_1","name":"Read","input":{}}`},
				3: {"index": `0`, "delta.partial_json": `"{\"file_path\":\"a\"}"`},
				4: {"index": `0`},
				5: {"index": `1`, "content_block": `{"type":"tool_use","id":"call_2","name":"Bash","input":{}}`},
				6: {"index": `1`, "delta.partial_json": `"{\"command\":\"ls\"}"`},
				7: {"index": `1`},
				8: {"delta.stop_reason": `"tool_use"`},
			}},
		{"a call whose first chunk carries its arguments", []string{
			chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`, "tool_calls"), usageChunk(1, 1)},
			[]string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"},
			map[int]want{3: {"delta": `{"type":"input_json_delta","partial_json":"{}"}`}}},
		{"usage chunk sets message_delta's usage, cached tokens as cache reads", []string{textChunk("x"), finishChunk("length"),
			`{"id":"c","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":30}}}`},
			[]string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"},
			map[int]want{5: {"delta.stop_reason": `"max_tokens"`,
				"usage": `{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":30,"output_tokens":7}`}}},
		{"no usage chunk is zero usage", []string{textChunk("x"), finishChunk("stop")},
			[]string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"},
			map[int]want{5: {"usage.output_tokens": `0`, "usage.input_tokens": `0`}}},
		{"an empty answer is start, delta and stop", []string{roleChunk(), finishChunk("stop"), usageChunk(3, 0)},
			[]string{"message_start", "ping", "message_delta", "message_stop"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := streamOf(t, tc.chunks, "")
			if got := wirecheck.Names(evs); !slices.Equal(got, tc.names) {
				t.Fatalf("events\n got  %q\n want %q", got, tc.names)
			}
			for i, w := range tc.want {
				t.Run(fmt.Sprintf("frame %d %s", i, evs[i].Name), func(t *testing.T) { w.Check(t, evs[i].Data) })
			}
			checkBlocks(t, evs)
		})
	}
}

// checkBlocks checks the block discipline every Anthropic stream keeps: blocks are started at
// indices 0, 1, 2… in order, each delta and stop is of the one open block, every block stops
// before the next starts and before message_delta, and a tool_use block's partial_json pieces
// make its whole input.
func checkBlocks(t *testing.T, evs []wirecheck.Event) {
	t.Helper()
	open, next := -1, 0
	var args strings.Builder
	var tool bool
	for i, e := range evs {
		idx := int(e.Data.Get("index").Int())
		switch e.Name {
		case "content_block_start":
			if open != -1 || idx != next {
				t.Errorf("frame %d: block %d starts while %d is open (next is %d)", i, idx, open, next)
			}
			open, next = idx, next+1
			tool = e.Data.Get("content_block.type").String() == "tool_use"
			args.Reset()
		case "content_block_delta":
			if idx != open {
				t.Errorf("frame %d: delta of block %d while %d is open", i, idx, open)
			}
			args.WriteString(e.Data.Get("delta.partial_json").String())
		case "content_block_stop":
			if idx != open {
				t.Errorf("frame %d: stop of block %d while %d is open", i, idx, open)
			}
			if tool && !gjson.Valid(args.String()) {
				t.Errorf("frame %d: tool_use block %d's input %q is not JSON", i, idx, args.String())
			}
			open = -1
		case "message_delta", "message_stop":
			if open != -1 {
				t.Errorf("frame %d: %s while block %d is open", i, e.Name, open)
			}
		}
	}
}

// A failure after the stream began ends it with Anthropic's error event (Claude Code then asks
// again without streaming), after what was sent, and without message_stop.
func TestInterruptedStreamEndsWithAnErrorEvent(t *testing.T) {
	evs := streamOf(t, []string{roleChunk(), textChunk("Hel")}, "the provider cut the stream")
	if got, want := wirecheck.Names(evs), []string{"message_start", "ping", "content_block_start", "content_block_delta", "error"}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	want{"error": `{"type":"overloaded_error","message":"the provider cut the stream"}`}.Check(t, evs[4].Data)
}

// The recorded stream Claude Code accepted for a tool call (agent-clients.md §9) has the same
// frames, by name and by the fields Claude Code reads, as the one written from chat chunks.
func TestStreamedToolCallHasTheShapeClaudeCodeAccepted(t *testing.T) {
	evs := streamOf(t, []string{roleChunk(), callStart(0, "toolu_1", "Read"), callArgs(0, `{"file_path": "<scratch>/hello.txt"}`),
		finishChunk("tool_calls"), usageChunk(12, 5)}, "")
	recorded := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	var got []string
	for _, e := range evs {
		if e.Name != "ping" {
			got = append(got, e.Name)
		}
	}
	if !slices.Equal(got, recorded) {
		t.Fatalf("events (pings aside) %q, want the recorded %q", got, recorded)
	}
	want{"content_block.type": `"tool_use"`, "content_block.id": `"toolu_1"`, "content_block.name": `"Read"`, "content_block.input": `{}`}.Check(t, evs[2].Data)
	want{"delta.type": `"input_json_delta"`, "delta.partial_json": `"{\"file_path\": \"<scratch>/hello.txt\"}"`}.Check(t, evs[3].Data)
	want{"delta.stop_reason": `"tool_use"`, "delta.stop_sequence": `null`, "usage.output_tokens": `5`}.Check(t, evs[5].Data)
}
