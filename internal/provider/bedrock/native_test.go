package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/providertest"
)

// A Messages request as Claude Code sends it, with members only Anthropic's format has.
const messagesBody = `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"fallback_models":["openai/gpt-5"],
 "thinking":{"type":"enabled","budget_tokens":1024},"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],
 "messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"…","signature":"sig=="},{"type":"text","text":"hello"}]},{"role":"user","content":"again"}]}`

func nativeRequest() *provider.Request {
	return &provider.Request{Model: model, Native: &provider.Native{Wire: provider.WireMessages, Body: []byte(messagesBody),
		Beta: "interleaved-thinking-2025-05-14, context-management-2025-06-27"}}
}

// A Messages request to a Claude model on Bedrock goes through InvokeModel as Bedrock's
// Anthropic body: the caller's members untouched (thinking signatures, cache_control), the
// gateway's own and model/stream left out, Bedrock's anthropic_version and the caller's betas
// in the body; the answer comes back as Anthropic wrote it.
func TestMessagesPassThroughInvokeModel(t *testing.T) {
	answer := `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":3}}`
	f := providertest.New(t, providertest.ServeJSON(http.StatusOK, []byte(answer)))
	r, err := newAdapter(t, f).Complete(context.Background(), nativeRequest())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Native || string(r.Body) != answer || r.Usage != (provider.Usage{PromptTokens: 15, CompletionTokens: 3}) {
		t.Errorf("answer %s native %v usage %+v, want the message as sent, native, 15+3 tokens", r.Body, r.Native, r.Usage)
	}
	body, _, path := f.Received()
	if !strings.HasSuffix(path, "/invoke") || !strings.Contains(path, "anthropic.claude") {
		t.Errorf("path %s, want InvokeModel of the model", path)
	}
	sent := gjson.ParseBytes(body)
	for _, gone := range []string{"model", "stream", "fallback_models"} {
		if sent.Get(gone).Exists() {
			t.Errorf("%s sent to Bedrock: %s", gone, body)
		}
	}
	if sent.Get("anthropic_version").String() != bedrockVersion || sent.Get("anthropic_beta.1").String() != "context-management-2025-06-27" {
		t.Errorf("version or betas missing: %s", body)
	}
	var in map[string]json.RawMessage
	_ = json.Unmarshal([]byte(messagesBody), &in)
	for _, kept := range []string{"thinking", "system", "messages", "max_tokens"} {
		if got, want := compact(t, sent.Get(kept).Raw), compact(t, string(in[kept])); got != want {
			t.Errorf("%s changed on the way: %s, want %s", kept, got, want)
		}
	}
}

func compact(t *testing.T, s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// chunk is one event of InvokeModelWithResponseStream: an Anthropic event in its bytes.
func chunk(anthropicEvent string) eventstream.Message {
	b, _ := json.Marshal(map[string][]byte{"bytes": []byte(anthropicEvent)})
	return event("chunk", b)
}

// The streamed answer's Anthropic events come through as they are, the first content marked,
// the usage read, ending at message_stop; an error event before content fails over.
func TestMessagesPassThroughStream(t *testing.T) {
	evs := []string{
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}`,
		`{"type":"message_stop"}`,
	}
	msgs := make([]eventstream.Message, len(evs))
	for i, e := range evs {
		msgs[i] = chunk(e)
	}
	f := providertest.New(t, serveEvents(msgs, 0, nil))
	st, err := newAdapter(t, f).Stream(context.Background(), nativeRequest())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got []string
	var content []bool
	var usage *provider.Usage
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !c.Native {
			t.Errorf("chunk %s not marked native", c.Data)
		}
		got, content = append(got, string(c.Data)), append(content, c.Content)
		if c.Usage != nil {
			usage = c.Usage
		}
	}
	if strings.Join(got, "\n") != strings.Join(evs, "\n") {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(evs, "\n"))
	}
	if len(content) != len(evs) || !content[2] || content[0] || content[1] {
		t.Errorf("content marks %v, want only the text delta", content)
	}
	if usage == nil || *usage != (provider.Usage{PromptTokens: 10, CompletionTokens: 4}) {
		t.Errorf("usage %+v, want 10+4", usage)
	}

	f.Handle(serveEvents([]eventstream.Message{chunk(evs[0]), chunk(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)}, 0, nil))
	st, err = newAdapter(t, f).Stream(context.Background(), nativeRequest())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for err == nil {
		_, err = st.Recv()
	}
	var perr *provider.Error
	if !errors.As(err, &perr) || perr.Reason != "server_error" {
		t.Errorf("error %v, want a server_error that fails over", err)
	}
}

// A request for another model family on Bedrock, or a chat request, still goes through Converse.
func TestOnlyClaudeMessagesPassThrough(t *testing.T) {
	for _, req := range []*provider.Request{
		{Model: "meta.llama3-70b-instruct-v1:0", Native: nativeRequest().Native, Body: []byte(`{"messages":[{"role":"user","content":"hi"}]}`)},
		{Model: model, Body: []byte(`{"messages":[{"role":"user","content":"hi"}]}`)},
	} {
		if native(req) {
			t.Errorf("%s (native %v) passed through, want Converse", req.Model, req.Native != nil)
		}
	}
	if !native(nativeRequest()) {
		t.Error("a Messages request to Claude on Bedrock is not passed through")
	}
}
