package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/providertest"
)

const model = "anthropic.claude-3-5-sonnet-20240620-v1:0"

var simple = &provider.Request{Body: []byte(`{"model":"bedrock/claude","messages":[{"role":"user","content":"Hi"}]}`), Model: model}

func TestComplete(t *testing.T) {
	tests := []struct {
		name    string
		handler func(t *testing.T) http.HandlerFunc
		check   func(t *testing.T, r *provider.Response, err error)
	}{
		{"a text answer becomes a chat.completion", func(t *testing.T) http.HandlerFunc { return serveJSON(t, "converse_text.json") },
			func(t *testing.T, r *provider.Response, err error) {
				if err != nil {
					t.Fatal(err)
				}
				b := gjson.ParseBytes(r.Body)
				providertest.WantFields(t, r.Body, map[string]string{
					"object": "chat.completion", "model": model, "choices.0.message.role": "assistant",
					"choices.0.message.content": "Hello! How can I help you today?", "choices.0.finish_reason": "stop",
					"usage.prompt_tokens": "12", "usage.completion_tokens": "10", "usage.total_tokens": "22",
				})
				if !strings.HasPrefix(b.Get("id").String(), "chatcmpl-") {
					t.Errorf("id = %s", b.Get("id"))
				}
			}},
		{"a toolUse answer becomes tool_calls", func(t *testing.T) http.HandlerFunc { return serveJSON(t, "converse_tool.json") },
			func(t *testing.T, r *provider.Response, err error) {
				if err != nil {
					t.Fatal(err)
				}
				tc := gjson.GetBytes(r.Body, "choices.0.message.tool_calls.0")
				if tc.Get("id").String() != "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q" || tc.Get("function.name").String() != "get_weather" ||
					tc.Get("function.arguments").String() != `{"city":"Paris"}` || gjson.GetBytes(r.Body, "choices.0.finish_reason").String() != "tool_calls" ||
					r.Usage != (provider.Usage{PromptTokens: 412, CompletionTokens: 61}) {
					t.Errorf("body = %s usage %+v", r.Body, r.Usage)
				}
			}},
		{"429 ThrottlingException with Retry-After is rate_limit", func(*testing.T) http.HandlerFunc {
			return serveError(429, "ThrottlingException", "Too many requests, please wait before trying again.", "Retry-After", "4")
		}, func(t *testing.T, _ *provider.Response, err error) {
			if pe := wantErr(t, err, chain.RateLimit, 429, ""); pe.RetryAfter != 4*time.Second {
				t.Errorf("RetryAfter = %v", pe.RetryAfter)
			}
		}},
		{"429 ThrottlingException without Retry-After is rate_limit", func(*testing.T) http.HandlerFunc {
			return serveError(429, "ThrottlingException", "Too many tokens, please wait before trying again.")
		}, func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.RateLimit, 429, "") }},
		{"500 InternalServerException is server_error", func(*testing.T) http.HandlerFunc {
			return serveError(500, "InternalServerException", "The server encountered an internal error.")
		}, func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ServerError, 500, "") }},
		{"503 ServiceUnavailableException is server_error", func(*testing.T) http.HandlerFunc {
			return serveError(503, "ServiceUnavailableException", "Bedrock is unable to process your request.")
		}, func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ServerError, 503, "") }},
		{"429 ModelNotReadyException is server_error", func(*testing.T) http.HandlerFunc {
			return serveError(429, "ModelNotReadyException", "Model is not ready to serve inference requests.")
		}, func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ServerError, 429, "") }},
		{"reset before headers is connection_error", func(*testing.T) http.HandlerFunc { return providertest.ResetBeforeHeaders },
			func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ConnectionError, 0, "") }},
		{"400 ValidationException for a long prompt is a final context_length_exceeded", func(*testing.T) http.HandlerFunc {
			return serveError(400, "ValidationException", "Input is too long for requested model.")
		}, func(t *testing.T, _ *provider.Response, err error) {
			if pe := wantErr(t, err, "", 400, "context_length_exceeded"); pe.Message != "provider bedrock: Input is too long for requested model." {
				t.Errorf("message = %q", pe.Message)
			}
		}},
		{"403 AccessDeniedException is final with a clear message", func(*testing.T) http.HandlerFunc {
			return serveError(403, "AccessDeniedException", "You don't have access to the model with the specified model ID.")
		}, func(t *testing.T, _ *provider.Response, err error) {
			if pe := wantErr(t, err, "", 502, ""); !strings.Contains(pe.Message, "denied access to model "+model) {
				t.Errorf("message = %q", pe.Message)
			}
		}},
		{"404 ResourceNotFoundException is final", func(*testing.T) http.HandlerFunc {
			return serveError(404, "ResourceNotFoundException", "Could not resolve the foundation model from the provided model identifier.")
		}, func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, "", 404, "model_not_found") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := providertest.New(t, tt.handler(t))
			r, err := newAdapter(t, f).Complete(context.Background(), simple)
			tt.check(t, r, err)
			_, h, path := f.Received()
			if path != "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse" || !strings.Contains(h.Get("Authorization"), "Credential=AKIDEXAMPLE/") ||
				!strings.Contains(h.Get("Authorization"), "/us-east-1/bedrock/aws4_request") {
				t.Errorf("path %q authorization %q", path, h.Get("Authorization"))
			}
		})
	}
}

func TestRegionPerRequest(t *testing.T) {
	f := providertest.New(t, serveJSON(t, "converse_text.json"))
	p := newAdapter(t, f)
	for _, region := range []string{"eu-central-1", "", "eu-central-1"} {
		req := *simple
		req.Region = region
		if _, err := p.Complete(context.Background(), &req); err != nil {
			t.Fatal(err)
		}
		want := region
		if want == "" {
			want = "us-east-1"
		}
		if _, h, _ := f.Received(); !strings.Contains(h.Get("Authorization"), "/"+want+"/bedrock/") {
			t.Errorf("region %q: authorization %q", region, h.Get("Authorization"))
		}
	}
	if n := len(p.(*adapter).clients); n != 2 {
		t.Errorf("%d clients cached, want one per region", n)
	}
}

func TestNoRegionIsFinal(t *testing.T) {
	awsTestEnv(t)
	p, err := New(provider.Config{Name: "bedrock"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), simple)
	if pe := wantErr(t, err, "", 500, ""); pe.Type != "provider_not_configured" {
		t.Errorf("error = %+v", pe)
	}
}

func TestNoAnswerReturnsPromptlyOnCancel(t *testing.T) {
	providertest.CheckCancelPromptly(t, newAdapter(t, providertest.New(t, providertest.Hang)), simple)
}

func TestStream(t *testing.T) {
	text := func(t *testing.T) []eventstream.Message { return events(t, "stream_text.jsonl") }
	const full = "R T:Hello T:! \"Quoted\"\nline F:stop U"
	tests := []struct {
		name    string
		handler func(t *testing.T) http.HandlerFunc
		want    string
		reason  chain.Reason // of the final error; "" means io.EOF
	}{
		{"text stream: role, deltas, finish, usage, then EOF", func(t *testing.T) http.HandlerFunc { return serveEvents(text(t), 0, nil) }, full, ""},
		{"tool stream: toolUse start and input deltas", func(t *testing.T) http.HandlerFunc { return serveEvents(events(t, "stream_tool.jsonl"), 0, nil) },
			`R T:Okay, let's check the weather. C:get_weather A:{"city": A: "Paris"} F:tool_calls U`, ""},
		{"slow first token still streams", func(t *testing.T) http.HandlerFunc { return serveEvents(text(t), 150*time.Millisecond, nil) }, full, ""},
		{"metadata ends the stream without waiting for the connection to close", func(t *testing.T) http.HandlerFunc { return serveEvents(text(t), 0, providertest.Hang) }, full, ""},
		{"messageStop without metadata still ends cleanly", func(t *testing.T) http.HandlerFunc { return serveEvents(text(t)[:5], 0, nil) },
			"R T:Hello T:! \"Quoted\"\nline F:stop", ""},
		{"a guardrail stop is content_filter", func(t *testing.T) http.HandlerFunc {
			return serveEvents(append(text(t)[:2:2], event("messageStop", []byte(`{"stopReason":"guardrail_intervened"}`))), 0, nil)
		}, "R T:Hello F:content_filter", ""},
		{"modelStreamErrorException before the first token is server_error", func(t *testing.T) http.HandlerFunc {
			return serveEvents(append(text(t)[:1:1], exception("modelStreamErrorException", "The model stream failed.")), 0, nil)
		}, "R", chain.ServerError},
		{"throttlingException in the stream is rate_limit", func(t *testing.T) http.HandlerFunc {
			return serveEvents(append(text(t)[:1:1], exception("throttlingException", "Too many tokens.")), 0, nil)
		}, "R", chain.RateLimit},
		{"cut before the first token is connection_error", func(t *testing.T) http.HandlerFunc { return serveEvents(text(t)[:1], 0, providertest.Cut) },
			"R", chain.ConnectionError},
		{"cut after the first token is connection_error", func(t *testing.T) http.HandlerFunc { return serveEvents(text(t)[:3], 0, providertest.Cut) },
			"R T:Hello T:! \"Quoted\"\nline", chain.ConnectionError},
		{"missing terminator: a clean end before messageStop is connection_error", func(t *testing.T) http.HandlerFunc {
			return serveEvents(text(t)[:4], 0, nil)
		}, "R T:Hello T:! \"Quoted\"\nline", chain.ConnectionError},
		{"a frame with a bad checksum is server_error", func(t *testing.T) http.HandlerFunc {
			return serveEvents(text(t)[:1], 0, func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte{0, 0, 0, 16, 0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0})
			})
		}, "R", chain.ServerError},
		{"a malformed event payload is server_error", func(t *testing.T) http.HandlerFunc {
			return serveEvents(append(text(t)[:1:1], event("contentBlockDelta", []byte(`{"contentBlockIndex":0,"delta":`))), 0, nil)
		}, "R", chain.ServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := providertest.StreamAll(t, newAdapter(t, providertest.New(t, tt.handler(t))), simple)
			if got := providertest.Summary(cs); got != tt.want {
				t.Errorf("chunks = %s, want %s", got, tt.want)
			}
			providertest.WantEnd(t, err, tt.reason, "", false, testSecret)
			for _, c := range cs {
				sum := providertest.Summary([]provider.Chunk{c})
				if c.Content != (sum[0] == 'T' || sum[0] == 'C' || sum[0] == 'A') {
					t.Errorf("Content = %v for %s", c.Content, c.Data)
				}
				if c.UsageOnly && (c.Usage == nil || c.Usage.PromptTokens == 0) {
					t.Errorf("usage chunk %s", c.Data)
				}
			}
		})
	}
}

func TestStreamErrorsBeforeHeaders(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		reason  chain.Reason
		code    string
	}{
		{"429 is rate_limit", serveError(429, "ThrottlingException", "Too many requests."), chain.RateLimit, ""},
		{"503 is server_error", serveError(503, "ServiceUnavailableException", "Unavailable."), chain.ServerError, ""},
		{"reset before headers is connection_error", providertest.ResetBeforeHeaders, chain.ConnectionError, ""},
		{"400 context length is final", serveError(400, "ValidationException", "Input is too long for requested model."), "", "context_length_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newAdapter(t, providertest.New(t, tt.handler)).Stream(context.Background(), simple)
			wantErr(t, err, tt.reason, 0, tt.code)
		})
	}
}

func TestCloseUnblocksRecv(t *testing.T) {
	s, err := newAdapter(t, providertest.New(t, serveEvents(events(t, "stream_text.jsonl")[:2], 0, providertest.Hang))).Stream(context.Background(), simple)
	if err != nil {
		t.Fatal(err)
	}
	providertest.CheckCloseUnblocksRecv(t, s, 2) // role and first text
}

func TestStreamCancelledMidStream(t *testing.T) {
	p := newAdapter(t, providertest.New(t, serveEvents(events(t, "stream_text.jsonl")[:2], 0, providertest.Hang)))
	providertest.CheckCancelledMidStream(t, func(ctx context.Context) (provider.Stream, error) { return p.Stream(ctx, simple) })
}

func TestConversationWithToolsRoundTrip(t *testing.T) {
	in := providertest.Fixture(t, "openai_conversation.json")
	orig := bytes.Clone(in)
	f := providertest.New(t, serveEvents(events(t, "stream_tool.jsonl"), 0, nil))
	s, err := newAdapter(t, f).Stream(context.Background(), &provider.Request{Body: in, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := providertest.Drain(t, s); err != io.EOF {
		t.Fatal(err)
	}
	got, _, path := f.Received()
	if path != "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream" {
		t.Errorf("path = %q", path)
	}
	var g, w any
	if json.Unmarshal(got, &g) != nil || json.Unmarshal(providertest.Fixture(t, "bedrock_conversation.json"), &w) != nil || !reflect.DeepEqual(g, w) {
		t.Errorf("body =\n%s\nwant\n%s", got, providertest.Fixture(t, "bedrock_conversation.json"))
	}
	if !bytes.Equal(in, orig) {
		t.Error("the request body was modified")
	}
}

func TestTranslateRejects(t *testing.T) {
	tests := []struct{ name, in, param string }{
		{"an https image URL", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x.test/a.png"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"json_object response_format", `{"messages":[],"response_format":{"type":"json_object"}}`, "response_format"},
		{"tool arguments that are not an object", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[0].tool_calls[0]"},
		{"a tool result without an id", `{"messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id"},
		{"missing messages", `{}`, "messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := toConverse([]byte(tt.in))
			if pe := wantErr(t, err, "", 400, ""); pe.Param != tt.param {
				t.Errorf("param = %q, want %q", pe.Param, tt.param)
			}
		})
	}
}

// Converse's body is serialised by the SDK, so the hook reads it from the middleware stack: what
// it sees must still be exactly what Bedrock receives, plain and streamed.
func TestSendHookSeesTheWireBytes(t *testing.T) {
	f := providertest.New(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/converse-stream") {
			serveEvents(events(t, "stream_text.jsonl"), 0, nil)(w, r)
			return
		}
		serveJSON(t, "converse_text.json")(w, r)
	})
	providertest.CheckSendHook(t, newAdapter(t, f), f, simple)
	// The hook runs before SigV4 signing, so the field it added is covered by the signature.
	if _, h, _ := f.Received(); !strings.Contains(h.Get("Authorization"), strings.ToLower(providertest.SendHookHeader)) {
		t.Errorf("Authorization = %q, want %s among the signed headers", h.Get("Authorization"), providertest.SendHookHeader)
	}
}

// The transport may read the request body once more after Do has returned (to check that it is
// exhausted) while the SDK has already closed it: that read must be a clean end, or the transport
// closes the connection under the response (a flaky "use of closed network connection").
func TestRequestBodyReadAfterCloseIsCleanEnd(t *testing.T) {
	f := providertest.New(t, serveJSON(t, "converse_text.json"))
	var body io.ReadCloser
	transport := f.Client().Transport
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		body = r.Body
		return transport.RoundTrip(r)
	})}
	awsTestEnv(t)
	p, err := New(provider.Config{Name: "bedrock", BaseURL: f.URL, Region: "us-east-1", Client: client})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), simple); err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, body); n != 0 || err != nil {
		t.Errorf("reading the request body after the call = %d, %v; want 0, nil", n, err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Without AWS credentials the call is refused as not configured — final, so it never reads as a
// provider fault that fails over — and nothing is sent.
func TestNoCredentialsIsFinal(t *testing.T) {
	f := providertest.New(t, serveJSON(t, "converse_text.json"))
	awsTestEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	p, err := New(provider.Config{Name: "bedrock", Type: "bedrock", BaseURL: f.URL, Region: "us-east-1", Client: f.Client()})
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		if stream {
			_, err = p.Stream(context.Background(), simple)
		} else {
			_, err = p.Complete(context.Background(), simple)
		}
		if pe := wantErr(t, err, "", 500, ""); pe.Type != "provider_not_configured" {
			t.Errorf("stream=%v: error = %+v, want provider_not_configured", stream, pe)
		}
	}
	if n := f.Calls(); n != 0 {
		t.Errorf("provider called %d times without credentials, want 0", n)
	}
}
