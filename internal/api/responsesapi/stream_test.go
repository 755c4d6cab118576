package responsesapi

import (
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
	ev := newEvents(httpapi.StartSSE(rec), newObject(t, `{"model":"m","input":"hi","stream":true}`))
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
func roleChunk() string           { return chunk(`{"role":"assistant","content":""}`, "") }
func textChunk(s string) string   { return chunk(`{"content":`+quote(s)+`}`, "") }
func finishChunk(r string) string { return chunk(`{}`, r) }
func callStart(index int, id, name string) string {
	return chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, index, id, name), "")
}
func callArgs(index int, args string) string {
	return chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, index, quote(args)), "")
}
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

var textEvents = []string{"response.output_item.added", "response.content_part.added"}

func TestStreamIsTheResponsesEventSequence(t *testing.T) {
	head := []string{"response.created", "response.in_progress"}
	textDone := []string{"response.output_text.done", "response.content_part.done", "response.output_item.done"}
	seq := func(parts ...[]string) []string { return slices.Concat(parts...) }
	rep := func(name string, n int) []string { return slices.Repeat([]string{name}, n) }
	for _, tc := range []struct {
		name   string
		chunks []string
		names  []string
		want   map[int]want // checks of the frame at each index
		output string       // response.completed's output
	}{
		{"text", []string{roleChunk(), textChunk("Hel"), textChunk("lo."), finishChunk("stop"), usageChunk(12, 3)},
			seq(head, textEvents, rep("response.output_text.delta", 2), textDone, []string{"response.completed"}),
			map[int]want{
				0: {"response.id": `"resp_abc"`, "response.status": `"in_progress"`, "response.output": `[]`, "response.usage": `null`, "response.secureai": report},
				1: {"response.id": `"resp_abc"`, "response.status": `"in_progress"`},
				2: {"output_index": `0`, "item": `{"type":"message","id":"msg_0_abc","status":"in_progress","role":"assistant","content":[]}`},
				3: {"item_id": `"msg_0_abc"`, "output_index": `0`, "content_index": `0`, "part": `{"type":"output_text","text":"","annotations":[],"logprobs":[]}`},
				4: {"item_id": `"msg_0_abc"`, "output_index": `0`, "content_index": `0`, "delta": `"Hel"`},
				5: {"delta": `"lo."`},
				6: {"text": `"Hello."`},
				7: {"part.text": `"Hello."`},
				8: {"output_index": `0`, "item": textItem("msg_0_abc", "Hello.")},
				9: {"response.status": `"completed"`, "response.model": `"fake/ok"`, "response.secureai": report,
					"response.usage": `{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15}`},
			}, `[` + textItem("msg_0_abc", "Hello.") + `]`},
		{"text then a tool call", []string{roleChunk(), textChunk("Running."), callStart(0, "call_1", "exec_command"),
			callArgs(0, `{"cmd":`), callArgs(0, `"ls"}`), finishChunk("tool_calls"), usageChunk(12, 9)},
			seq(head, textEvents, []string{"response.output_text.delta"}, textDone,
				[]string{"response.output_item.added"}, rep("response.function_call_arguments.delta", 2),
				[]string{"response.function_call_arguments.done", "response.output_item.done", "response.completed"}),
			map[int]want{
				8:  {"output_index": `1`, "item": `{"type":"function_call","id":"fc_1_abc","call_id":"call_1","name":"exec_command","arguments":"","status":"in_progress"}`},
				9:  {"item_id": `"fc_1_abc"`, "output_index": `1`, "delta": `"{\"cmd\":"`},
				11: {"item_id": `"fc_1_abc"`, "output_index": `1`, "name": `"exec_command"`, "arguments": `"{\"cmd\":\"ls\"}"`},
				12: {"output_index": `1`, "item": callItem("fc_1_abc", "call_1", "exec_command", `{"cmd":"ls"}`)},
				13: {"response.status": `"completed"`},
			}, `[` + textItem("msg_0_abc", "Running.") + `,` + callItem("fc_1_abc", "call_1", "exec_command", `{"cmd":"ls"}`) + `]`},
		{"a tool call alone", []string{roleChunk(), callStart(0, "call_1", "exec_command"), callArgs(0, `{"cmd": "echo hi"}`), finishChunk("tool_calls"), usageChunk(12, 5)},
			seq(head, []string{"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done",
				"response.output_item.done", "response.completed"}),
			map[int]want{2: {"output_index": `0`, "item.id": `"fc_0_abc"`}},
			`[` + callItem("fc_0_abc", "call_1", "exec_command", `{"cmd": "echo hi"}`) + `]`},
		{"usage chunk with cached and reasoning tokens", []string{textChunk("x"), finishChunk("stop"),
			`{"id":"c","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":30},"completion_tokens_details":{"reasoning_tokens":4}}}`},
			seq(head, textEvents, []string{"response.output_text.delta"}, textDone, []string{"response.completed"}),
			map[int]want{8: {"response.usage": `{"input_tokens":50,"input_tokens_details":{"cached_tokens":30},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":4},"total_tokens":57}`}},
			`[` + textItem("msg_0_abc", "x") + `]`},
		{"finish length ends with response.incomplete", []string{textChunk("cut"), finishChunk("length"), usageChunk(5, 64)},
			seq(head, textEvents, []string{"response.output_text.delta"}, textDone, []string{"response.incomplete"}),
			map[int]want{8: {"response.status": `"incomplete"`, "response.incomplete_details": `{"reason":"max_output_tokens"}`}},
			`[` + textItem("msg_0_abc", "cut") + `]`},
		{"an empty answer is created, in_progress and completed", []string{roleChunk(), finishChunk("stop"), usageChunk(3, 0)},
			seq(head, []string{"response.completed"}), nil, `[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := streamOf(t, tc.chunks, "")
			if got := wirecheck.Names(evs); !slices.Equal(got, tc.names) {
				t.Fatalf("events\n got  %q\n want %q", got, tc.names)
			}
			for i, w := range tc.want {
				t.Run(fmt.Sprintf("frame %d %s", i, evs[i].Name), func(t *testing.T) { w.Check(t, evs[i].Data) })
			}
			checkItems(t, evs)
			want{"response.output": tc.output}.Check(t, evs[len(evs)-1].Data)
		})
	}
}

// checkItems checks what Codex and the OpenAI SDKs rely on in every Responses stream: sequence
// numbers 0, 1, 2… in order; response.created and response.in_progress first and one terminal
// event last, all of the same response; items added at output_index 0, 1, 2… one at a time, each
// event of an item carrying its item_id and output_index, the done item the added one with its
// whole text or arguments (the deltas put together); and the terminal response's output equal to
// the items done, in order.
func checkItems(t *testing.T, evs []wirecheck.Event) {
	t.Helper()
	if len(evs) < 3 || evs[0].Name != "response.created" || evs[1].Name != "response.in_progress" {
		t.Fatalf("the stream does not begin with response.created, response.in_progress: %q", wirecheck.Names(evs))
	}
	last := evs[len(evs)-1]
	if !slices.Contains([]string{"response.completed", "response.incomplete", "response.failed"}, last.Name) {
		t.Fatalf("the stream ends with %s", last.Name)
	}
	var done []string
	open := -1 // output_index of the open item
	var added gjson.Result
	var deltas strings.Builder
	for i, e := range evs {
		if got := e.Data.Get("sequence_number"); got.Type != gjson.Number || int(got.Int()) != i {
			t.Errorf("frame %d (%s): sequence_number %s", i, e.Name, got.Raw)
		}
		if r := e.Data.Get("response"); r.Exists() && r.Get("id").String() != evs[0].Data.Get("response.id").String() {
			t.Errorf("frame %d (%s): response id %s, not the created one's", i, e.Name, r.Get("id").Raw)
		}
		idx := int(e.Data.Get("output_index").Int())
		switch e.Name {
		case "response.output_item.added":
			if open != -1 || idx != len(done) {
				t.Errorf("frame %d: item %d added while %d is open, %d done", i, idx, open, len(done))
			}
			open, added = idx, e.Data.Get("item")
			deltas.Reset()
			if added.Get("status").String() != "in_progress" {
				t.Errorf("frame %d: added item's status %s", i, added.Get("status").Raw)
			}
		case "response.output_item.done":
			item := e.Data.Get("item")
			if idx != open || item.Get("id").String() != added.Get("id").String() || item.Get("type").String() != added.Get("type").String() {
				t.Errorf("frame %d: done item %d %s is not the added %d %s", i, idx, item.Get("id").Raw, open, added.Get("id").Raw)
			}
			if item.Get("status").String() != "completed" {
				t.Errorf("frame %d: done item's status %s", i, item.Get("status").Raw)
			}
			switch item.Get("type").String() {
			case "message":
				if got := item.Get("content.0.text").String(); got != deltas.String() {
					t.Errorf("frame %d: done message's text %q, the deltas made %q", i, got, deltas.String())
				}
			case "function_call":
				for _, f := range []string{"call_id", "name"} {
					if item.Get(f).String() != added.Get(f).String() {
						t.Errorf("frame %d: done call's %s %s, added as %s", i, f, item.Get(f).Raw, added.Get(f).Raw)
					}
				}
				if got := item.Get("arguments").String(); got != deltas.String() {
					t.Errorf("frame %d: done call's arguments %q, the deltas made %q", i, got, deltas.String())
				}
			}
			done = append(done, item.Raw)
			open = -1
		case "response.created", "response.in_progress", "response.completed", "response.incomplete", "response.failed":
			if open != -1 && e.Name != "response.failed" {
				t.Errorf("frame %d: %s while item %d is open", i, e.Name, open)
			}
		default: // an event of the open item
			if open == -1 || idx != open || e.Data.Get("item_id").String() != added.Get("id").String() {
				t.Errorf("frame %d (%s): item %s at %d, but the open item is %s at %d", i, e.Name, e.Data.Get("item_id").Raw, idx, added.Get("id").Raw, open)
			}
			switch e.Name {
			case "response.output_text.delta", "response.function_call_arguments.delta":
				deltas.WriteString(e.Data.Get("delta").String())
			case "response.output_text.done":
				if got := e.Data.Get("text").String(); got != deltas.String() {
					t.Errorf("frame %d: text %q, the deltas made %q", i, got, deltas.String())
				}
			case "response.function_call_arguments.done":
				if got := e.Data.Get("arguments").String(); got != deltas.String() {
					t.Errorf("frame %d: arguments %q, the deltas made %q", i, got, deltas.String())
				}
				if e.Data.Get("name").String() != added.Get("name").String() {
					t.Errorf("frame %d: arguments done for %s, the item added was %s", i, e.Data.Get("name").Raw, added.Get("name").Raw)
				}
			}
		}
	}
	if last.Name != "response.failed" {
		if got := last.Data.Get("response.output").Raw; !wirecheck.SameJSON(got, "["+strings.Join(done, ",")+"]") {
			t.Errorf("%s's output %s is not the items done: [%s]", last.Name, got, strings.Join(done, ","))
		}
	}
}

// A failure after the stream began ends it with response.failed (Codex resends the request; it
// does not understand an error event), carrying the items finished so far.
func TestInterruptedStreamEndsWithResponseFailed(t *testing.T) {
	evs := streamOf(t, []string{roleChunk(), textChunk("Hel")}, "the provider cut the stream")
	if got, want := wirecheck.Names(evs), []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.content_part.added", "response.output_text.delta", "response.failed"}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	want{"response.status": `"failed"`, "response.error": `{"code":"server_error","message":"the provider cut the stream"}`,
		"response.incomplete_details": `null`}.Check(t, evs[5].Data)
	checkItems(t, evs)
}

// The recorded function-call stream Codex accepted (agent-clients.md §9) has the same frames, by
// name and by the fields Codex reads, as the one written from chat chunks.
func TestStreamedFunctionCallHasTheShapeCodexAccepted(t *testing.T) {
	evs := streamOf(t, []string{roleChunk(), callStart(0, "call_1", "exec_command"), callArgs(0, `{"cmd": "echo hi"}`),
		finishChunk("tool_calls"), usageChunk(12, 5)}, "")
	recorded := []string{"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done",
		"response.output_item.done", "response.completed"}
	if got := wirecheck.Names(evs)[2:]; !slices.Equal(got, recorded) {
		t.Fatalf("events after created and in_progress %q, want the recorded %q", got, recorded)
	}
	want{"sequence_number": `2`, "output_index": `0`, "item.type": `"function_call"`, "item.name": `"exec_command"`, "item.arguments": `""`,
		"item.call_id": `"call_1"`, "item.status": `"in_progress"`}.Check(t, evs[2].Data)
	want{"sequence_number": `3`, "output_index": `0`, "delta": `"{\"cmd\": \"echo hi\"}"`}.Check(t, evs[3].Data)
	want{"arguments": `"{\"cmd\": \"echo hi\"}"`}.Check(t, evs[4].Data)
	want{"sequence_number": `5`, "item.arguments": `"{\"cmd\": \"echo hi\"}"`, "item.status": `"completed"`, "item.call_id": `"call_1"`}.Check(t, evs[5].Data)
	want{"sequence_number": `6`, "response.status": `"completed"`,
		"response.usage": `{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":17}`}.Check(t, evs[6].Data)
}
