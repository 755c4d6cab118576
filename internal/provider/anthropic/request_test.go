package anthropic

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/providertest"
)

func TestConversationWithToolsRoundTrip(t *testing.T) {
	in := providertest.Fixture(t, "openai_conversation.json")
	orig := bytes.Clone(in)
	f := providertest.New(t, providertest.ServeSSE(events(t, "stream_tool.sse"), 0, nil))
	s, err := newAdapter(t, f).Stream(context.Background(), &provider.Request{Body: in, Model: "claude-sonnet-4-20250514"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := providertest.Drain(t, s); err != io.EOF {
		t.Fatal(err)
	}
	got, _, _ := f.Received()
	providertest.JSONEqual(t, got, providertest.Fixture(t, "anthropic_conversation.json"))
	if !bytes.Equal(in, orig) {
		t.Error("the request body was modified")
	}
}

func TestBuildBody(t *testing.T) {
	tests := []struct {
		name, in, want, param string
	}{
		{"defaults max_tokens and passes a string prompt as a text block",
			`{"messages":[{"role":"user","content":"Hi"}]}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`, ""},
		{"max_tokens, a single stop string, a named tool choice with parallel calls allowed",
			`{"max_tokens":9,"stop":"END","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
			`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"stop_sequences":["END"],"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"tool","name":"f"}}`, ""},
		{"tool_choice none",
			`{"messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"none"}}`, ""},
		{"json_schema response_format becomes output_config",
			`{"messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}}}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`, ""},
		{"json_object response_format is a 400", `{"messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_object"}}`, "", "response_format"},
		{"an audio part is a 400", `{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`, "", "messages[0].content[0].type"},
		{"a non-base64 data URL is a 400", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, "", "messages[0].content[0].image_url.url"},
		{"tool arguments that are not an object are a 400", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"[1"}}]}]}`, "", "messages[0].tool_calls[0].function.arguments"},
		{"an unknown role is a 400", `{"messages":[{"role":"wizard","content":"x"}]}`, "", "messages[0].role"},
		{"missing messages is a 400", `{"model":"x"}`, "", "messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := buildBody([]byte(tt.in), "m", false)
			if tt.param != "" {
				if pe := wantErr(t, err, "", 400, ""); pe.Param != tt.param || pe.Type != "invalid_request_error" {
					t.Errorf("err = %+v, want param %q", pe, tt.param)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			providertest.JSONEqual(t, got, []byte(tt.want))
		})
	}
}
