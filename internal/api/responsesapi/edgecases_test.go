package responsesapi

import (
	"slices"
	"testing"

	"github.com/secureai-gateway/gateway/internal/testkit/wirecheck"
)

// Instructions with an input string translate to a JSON body with a system then a user message.
func TestInstructionsWithAnInputString(t *testing.T) {
	chat, _ := translated(t, body(`"hi"`, `"instructions":"Be terse."`))
	want{"messages": `[{"role":"system","content":"Be terse."},{"role":"user","content":"hi"}]`}.Check(t, chat)
}

// Two tool calls in one answer are two function_call items, each with its own call_id, name and
// arguments, in the done events and in response.completed's output.
func TestStreamOfTwoToolCallsIsTwoFunctionCallItems(t *testing.T) {
	evs := streamOf(t, []string{roleChunk(), callStart(0, "call_1", "exec_command"), callArgs(0, `{"cmd":"ls"}`),
		callStart(1, "call_2", "view_image"), callArgs(1, `{"path":"a.png"}`), finishChunk("tool_calls"), usageChunk(12, 20)}, "")
	call := []string{"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done"}
	if got, want := wirecheck.Names(evs), slices.Concat([]string{"response.created", "response.in_progress"}, call, call, []string{"response.completed"}); !slices.Equal(got, want) {
		t.Fatalf("events\n got  %q\n want %q", got, want)
	}
	want{"item": `{"type":"function_call","id":"fc_0_abc","call_id":"call_1","name":"exec_command","arguments":"","status":"in_progress"}`}.Check(t, evs[2].Data)
	want{"name": `"exec_command"`, "arguments": `"{\"cmd\":\"ls\"}"`}.Check(t, evs[4].Data)
	want{"item": callItem("fc_0_abc", "call_1", "exec_command", `{"cmd":"ls"}`)}.Check(t, evs[5].Data)
	want{"item": `{"type":"function_call","id":"fc_1_abc","call_id":"call_2","name":"view_image","arguments":"","status":"in_progress"}`}.Check(t, evs[6].Data)
	want{"item": callItem("fc_1_abc", "call_2", "view_image", `{"path":"a.png"}`)}.Check(t, evs[9].Data)
	want{"response.output": `[` + callItem("fc_0_abc", "call_1", "exec_command", `{"cmd":"ls"}`) + `,` +
		callItem("fc_1_abc", "call_2", "view_image", `{"path":"a.png"}`) + `]`}.Check(t, evs[10].Data)
	checkItems(t, evs)
}
