package messagesapi

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"
)

// A tool call cut off by max_tokens has arguments that are not whole JSON; its tool_use input is
// still an object ({}), and the message JSON.
func TestCutToolCallArgumentsAreAnEmptyInput(t *testing.T) {
	c := chatCompletion(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"Write",`+
		`"arguments":"{\"file_path\":\"a.txt\",\"content\":\"hel"}}]}`, "length", usage12x14)
	b := appendMessage(nil, "msg_abc", "fake/ok", []byte(c), []byte(report))
	if !json.Valid(b) {
		t.Fatalf("not JSON: %s", b)
	}
	want{"content": `[{"type":"tool_use","id":"call_1","name":"Write","input":{}}]`, "stop_reason": `"max_tokens"`}.Check(t, gjson.ParseBytes(b))
}
