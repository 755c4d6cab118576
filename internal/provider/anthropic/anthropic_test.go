package anthropic

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/providertest"
)

var simple = &provider.Request{Body: []byte(`{"model":"anthropic/claude","messages":[{"role":"user","content":"Hi"}]}`), Model: "claude-sonnet-4-20250514"}

func TestComplete(t *testing.T) {
	tests := []struct {
		name    string
		handler func(t *testing.T) http.HandlerFunc
		check   func(t *testing.T, r *provider.Response, err error)
	}{
		{"a text answer becomes a chat.completion", func(t *testing.T) http.HandlerFunc { return providertest.ServeFixture(t, 200, "message_text.json") },
			func(t *testing.T, r *provider.Response, err error) {
				if err != nil {
					t.Fatal(err)
				}
				b := gjson.ParseBytes(r.Body)
				providertest.WantFields(t, r.Body, map[string]string{
					"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "object": "chat.completion", "model": "claude-sonnet-4-20250514",
					"choices.0.message.role": "assistant", "choices.0.message.content": "Hello! How can I help you today?",
					"choices.0.finish_reason": "stop", "usage.prompt_tokens": "12", "usage.completion_tokens": "10", "usage.total_tokens": "22",
				})
				if b.Get("created").Int() == 0 || r.Usage != (provider.Usage{PromptTokens: 12, CompletionTokens: 10}) {
					t.Errorf("created/usage wrong: %s %+v", r.Body, r.Usage)
				}
			}},
		{"a tool_use answer becomes tool_calls", func(t *testing.T) http.HandlerFunc { return providertest.ServeFixture(t, 200, "message_tool.json") },
			func(t *testing.T, r *provider.Response, err error) {
				if err != nil {
					t.Fatal(err)
				}
				b := gjson.ParseBytes(r.Body)
				tc := b.Get("choices.0.message.tool_calls.0")
				if tc.Get("id").String() != "toolu_01A09q90qw90lq917835lq9" || tc.Get("type").String() != "function" ||
					tc.Get("function.name").String() != "get_weather" ||
					tc.Get("function.arguments").String() != `{"location":"San Francisco, CA","unit":"celsius"}` ||
					b.Get("choices.0.finish_reason").String() != "tool_calls" || r.Usage.PromptTokens != 484 {
					t.Errorf("body = %s usage %+v", r.Body, r.Usage)
				}
			}},
		{"429 with Retry-After is rate_limit", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeFixture(t, 429, "error_rate_limit.json", "Retry-After", "7")
		}, func(t *testing.T, _ *provider.Response, err error) {
			if pe := wantErr(t, err, chain.RateLimit, 429, ""); pe.RetryAfter != 7*time.Second {
				t.Errorf("RetryAfter = %v", pe.RetryAfter)
			}
		}},
		{"429 without Retry-After is rate_limit", func(t *testing.T) http.HandlerFunc { return providertest.ServeFixture(t, 429, "error_rate_limit.json") },
			func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.RateLimit, 429, "") }},
		{"500 is server_error", func(t *testing.T) http.HandlerFunc { return providertest.ServeFixture(t, 500, "error_api.json") },
			func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ServerError, 500, "") }},
		{"503 is server_error", func(t *testing.T) http.HandlerFunc { return providertest.ServeFixture(t, 503, "error_overloaded.json") },
			func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ServerError, 503, "") }},
		{"529 overloaded is server_error", func(t *testing.T) http.HandlerFunc { return providertest.ServeFixture(t, 529, "error_overloaded.json") },
			func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ServerError, 529, "") }},
		{"reset before headers is connection_error", func(*testing.T) http.HandlerFunc { return providertest.ResetBeforeHeaders },
			func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ConnectionError, 0, "") }},
		{"a body cut short is connection_error", func(t *testing.T) http.HandlerFunc {
			body := providertest.Fixture(t, "message_text.json")
			return func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Length", "1000")
				_, _ = w.Write(body[:40])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}
		}, func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ConnectionError, 0, "") }},
		{"a malformed body is server_error", func(*testing.T) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"id":"msg_1","content":[`) }
		}, func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ServerError, 0, "") }},
		{"400 context length is final", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeFixture(t, 400, "error_context_length.json")
		},
			func(t *testing.T, _ *provider.Response, err error) {
				pe := wantErr(t, err, "", 400, "context_length_exceeded")
				if !strings.Contains(pe.Message, "prompt is too long") || pe.Type != "invalid_request_error" {
					t.Errorf("message = %q type %q", pe.Message, pe.Type)
				}
			}},
		{"400 content filter is final", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeFixture(t, 400, "error_content_filter.json")
		},
			func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, "", 400, "content_filter") }},
		{"401 is final and names no credential", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeFixture(t, 401, "error_authentication.json")
		},
			func(t *testing.T, _ *provider.Response, err error) {
				if pe := wantErr(t, err, "", 502, ""); pe.Type != "upstream_auth_error" {
					t.Errorf("type = %q", pe.Type)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := providertest.New(t, tt.handler(t))
			r, err := newAdapter(t, f).Complete(context.Background(), simple)
			tt.check(t, r, err)
		})
	}
}

func TestCompleteSendsCredentialHeaders(t *testing.T) {
	f := providertest.New(t, providertest.ServeFixture(t, 200, "message_text.json"))
	if _, err := newAdapter(t, f).Complete(context.Background(), simple); err != nil {
		t.Fatal(err)
	}
	_, h, path := f.Received()
	if path != "/v1/messages" || h.Get("X-Api-Key") != testKey || h.Get("Anthropic-Version") != "2023-06-01" || h.Get("Content-Type") != "application/json" {
		t.Errorf("path %q headers %v", path, h)
	}
}

func TestNoAnswerReturnsPromptlyOnCancel(t *testing.T) {
	providertest.CheckCancelPromptly(t, newAdapter(t, providertest.New(t, providertest.Hang)), simple)
}

func TestUnconfiguredProviderFailsFinal(t *testing.T) {
	p, err := New(provider.Config{Name: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), simple)
	pe := wantErr(t, err, "", 500, "")
	if pe.Type != "provider_not_configured" || pe.Message != "provider claude has no credential configured" {
		t.Errorf("error = %+v", pe)
	}
	if _, err = p.Stream(context.Background(), simple); err == nil {
		t.Error("Stream succeeded without a credential")
	}
}

func TestStream(t *testing.T) {
	text := func(t *testing.T) []string { return events(t, "stream_text.sse") }
	errorEvent := func(typ string) string {
		return "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"" + typ + "\",\"message\":\"Overloaded\"}}\n\n"
	}
	tests := []struct {
		name    string
		handler func(t *testing.T) http.HandlerFunc
		want    string       // summary of the chunks received
		reason  chain.Reason // of the final error; "" with final=false means io.EOF
		final   bool         // the final error is a final (non-failover) provider error
	}{
		{"text stream: role, deltas, finish, usage, then EOF", func(t *testing.T) http.HandlerFunc { return providertest.ServeSSE(text(t), 0, nil) },
			"R T:Hello T:! \"Quoted\"\nline F:stop U", "", false},
		{"tool stream: tool_use start and input_json deltas", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeSSE(events(t, "stream_tool.sse"), 0, nil)
		},
			`R T:Okay, let's check the weather. C:get_weather A:{"location": A: "San Francisco, CA"} F:tool_calls U`, "", false},
		{"slow first token still streams", func(t *testing.T) http.HandlerFunc { return providertest.ServeSSE(text(t), 150*time.Millisecond, nil) },
			"R T:Hello T:! \"Quoted\"\nline F:stop U", "", false},
		{"finish without message_stop ends after usage, without waiting", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeSSE(text(t)[:7], 0, providertest.Hang)
		}, "R T:Hello T:! \"Quoted\"\nline F:stop U", "", false},
		{"overloaded error event before the first token is server_error", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeSSE(append(text(t)[:3:3], errorEvent("overloaded_error")), 0, nil)
		}, "R", chain.ServerError, false},
		{"api_error event before the first token is server_error", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeSSE(append(text(t)[:2:2], errorEvent("api_error")), 0, nil)
		}, "R", chain.ServerError, false},
		{"timeout_error event (Anthropic's 504) before the first token is server_error", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeSSE(append(text(t)[:2:2], errorEvent("timeout_error")), 0, nil)
		}, "R", chain.ServerError, false},
		{"rate_limit_error event before the first token is rate_limit", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeSSE(append(text(t)[:1:1], errorEvent("rate_limit_error")), 0, nil)
		}, "R", chain.RateLimit, false},
		{"overloaded error event after the first token is just an error", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeSSE(append(text(t)[:4:4], errorEvent("overloaded_error")), 0, nil)
		}, "R T:Hello", "", true},
		{"cut before the first token is connection_error", func(t *testing.T) http.HandlerFunc { return providertest.ServeSSE(text(t)[:3], 0, providertest.Cut) },
			"R", chain.ConnectionError, false},
		{"cut after the first token is connection_error", func(t *testing.T) http.HandlerFunc { return providertest.ServeSSE(text(t)[:5], 0, providertest.Cut) },
			"R T:Hello T:! \"Quoted\"\nline", chain.ConnectionError, false},
		{"missing terminator: a clean end before message_delta is connection_error", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeSSE(text(t)[:6], 0, nil)
		}, "R T:Hello T:! \"Quoted\"\nline", chain.ConnectionError, false},
		{"malformed chunk is server_error", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeSSE(append(text(t)[:1:1], "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\n\n"), 0, nil)
		}, "R", chain.ServerError, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := providertest.StreamAll(t, newAdapter(t, providertest.New(t, tt.handler(t))), simple)
			if got := providertest.Summary(cs); got != tt.want {
				t.Errorf("chunks = %s, want %s", got, tt.want)
			}
			providertest.WantEnd(t, err, tt.reason, "", tt.final, testKey)
			for _, c := range cs {
				if c.UsageOnly && (c.Usage == nil || c.Usage.PromptTokens == 0 || c.Usage.CompletionTokens == 0) {
					t.Errorf("usage chunk without usage: %s", c.Data)
				}
				if !gjson.ValidBytes(c.Data) || gjson.GetBytes(c.Data, "object").String() != "chat.completion.chunk" {
					t.Errorf("bad chunk %s", c.Data)
				}
			}
		})
	}
}

func TestStreamContentFlag(t *testing.T) {
	f := providertest.New(t, providertest.ServeSSE(events(t, "stream_tool.sse"), 0, nil))
	s, err := newAdapter(t, f).Stream(context.Background(), simple)
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := providertest.Drain(t, s)
	var flags []bool
	for _, c := range cs {
		flags = append(flags, c.Content)
	}
	// role, text, tool start, args, args, finish, usage; the empty partial_json makes no chunk.
	want := []bool{false, true, true, true, true, false, false}
	if len(flags) != len(want) {
		t.Fatalf("flags = %v, want %v", flags, want)
	}
	for i := range want {
		if flags[i] != want[i] {
			t.Fatalf("flags = %v, want %v", flags, want)
		}
	}
	if u := cs[len(cs)-1].Usage; u == nil || *u != (provider.Usage{PromptTokens: 472, CompletionTokens: 89}) {
		t.Errorf("usage = %+v", u)
	}
	if got := gjson.GetBytes(cs[2].Data, "choices.0.delta.tool_calls.0").Raw; got != `{"index":0,"id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","type":"function","function":{"name":"get_weather","arguments":""}}` {
		t.Errorf("tool call delta = %s", got)
	}
}

func TestStreamErrorsBeforeHeaders(t *testing.T) {
	tests := []struct {
		name    string
		handler func(t *testing.T) http.HandlerFunc
		reason  chain.Reason
		code    string
	}{
		{"429 is rate_limit", func(t *testing.T) http.HandlerFunc { return providertest.ServeFixture(t, 429, "error_rate_limit.json") }, chain.RateLimit, ""},
		{"529 is server_error", func(t *testing.T) http.HandlerFunc { return providertest.ServeFixture(t, 529, "error_overloaded.json") }, chain.ServerError, ""},
		{"reset before headers is connection_error", func(*testing.T) http.HandlerFunc { return providertest.ResetBeforeHeaders }, chain.ConnectionError, ""},
		{"400 context length is final", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeFixture(t, 400, "error_context_length.json")
		}, "", "context_length_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newAdapter(t, providertest.New(t, tt.handler(t))).Stream(context.Background(), simple)
			wantErr(t, err, tt.reason, 0, tt.code)
		})
	}
}

func TestCloseUnblocksRecv(t *testing.T) {
	s, err := newAdapter(t, providertest.New(t, providertest.ServeSSE(events(t, "stream_text.sse")[:4], 0, providertest.Hang))).Stream(context.Background(), simple)
	if err != nil {
		t.Fatal(err)
	}
	providertest.CheckCloseUnblocksRecv(t, s, 2) // role and first text
}

func TestStreamCancelledMidStream(t *testing.T) {
	p := newAdapter(t, providertest.New(t, providertest.ServeSSE(events(t, "stream_text.sse")[:4], 0, providertest.Hang)))
	providertest.CheckCancelledMidStream(t, func(ctx context.Context) (provider.Stream, error) { return p.Stream(ctx, simple) })
}
