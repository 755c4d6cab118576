package gemini

import (
	"bytes"
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

var simple = &provider.Request{Body: []byte(`{"model":"google/gemini-2.5-flash","messages":[{"role":"user","content":"Hi"}]}`), Model: "gemini-2.5-flash"}

func TestComplete(t *testing.T) {
	tests := []struct {
		name    string
		handler func(t *testing.T) http.HandlerFunc
		check   func(t *testing.T, r *provider.Response, err error)
	}{
		{"a text answer becomes a chat.completion", func(t *testing.T) http.HandlerFunc { return providertest.ServeFixture(t, 200, "response_text.json") },
			func(t *testing.T, r *provider.Response, err error) {
				if err != nil {
					t.Fatal(err)
				}
				providertest.WantFields(t, r.Body, map[string]string{
					"id": "fbZ6aOyzMbS2nvgPnL6i-Ak", "object": "chat.completion", "model": "gemini-2.5-flash",
					"choices.0.message.role": "assistant", "choices.0.message.content": "Hello! How can I help you today?",
					"choices.0.finish_reason": "stop", "usage.prompt_tokens": "4", "usage.completion_tokens": "34", "usage.total_tokens": "38",
				})
			}},
		{"function calls become tool_calls", func(t *testing.T) http.HandlerFunc { return providertest.ServeFixture(t, 200, "response_tool.json") },
			func(t *testing.T, r *provider.Response, err error) {
				if err != nil {
					t.Fatal(err)
				}
				b := gjson.ParseBytes(r.Body)
				calls := b.Get("choices.0.message.tool_calls").Array()
				if len(calls) != 2 || !strings.HasPrefix(calls[0].Get("id").String(), "call_") || calls[0].Get("id").String() == calls[1].Get("id").String() ||
					calls[1].Get("function.name").String() != "get_weather" || calls[1].Get("function.arguments").String() != `{"city":"Berlin"}` ||
					b.Get("choices.0.message.content").Type != gjson.Null || b.Get("choices.0.finish_reason").String() != "tool_calls" {
					t.Errorf("body = %s", r.Body)
				}
			}},
		{"429 RESOURCE_EXHAUSTED with Retry-After is rate_limit", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeFixture(t, 429, "error_rate_limit.json", "Retry-After", "3")
		}, func(t *testing.T, _ *provider.Response, err error) {
			if pe := wantErr(t, err, chain.RateLimit, 429, ""); pe.RetryAfter != 3*time.Second {
				t.Errorf("RetryAfter = %v", pe.RetryAfter)
			}
		}},
		{"429 without Retry-After takes RetryInfo's delay", func(t *testing.T) http.HandlerFunc { return providertest.ServeFixture(t, 429, "error_rate_limit.json") },
			func(t *testing.T, _ *provider.Response, err error) {
				if pe := wantErr(t, err, chain.RateLimit, 429, ""); pe.RetryAfter != 37*time.Second {
					t.Errorf("RetryAfter = %v", pe.RetryAfter)
				}
			}},
		{"500 INTERNAL is server_error", func(t *testing.T) http.HandlerFunc { return providertest.ServeFixture(t, 500, "error_internal.json") },
			func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ServerError, 500, "") }},
		{"503 UNAVAILABLE is server_error", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeFixture(t, 503, "error_unavailable.json")
		},
			func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ServerError, 503, "") }},
		{"reset before headers is connection_error", func(*testing.T) http.HandlerFunc { return providertest.ResetBeforeHeaders },
			func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ConnectionError, 0, "") }},
		{"a body cut short is connection_error", func(t *testing.T) http.HandlerFunc {
			body := providertest.Fixture(t, "response_text.json")
			return func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Length", "2000")
				_, _ = w.Write(body[:40])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}
		}, func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ConnectionError, 0, "") }},
		{"a malformed body is server_error", func(*testing.T) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"candidates": [`) }
		}, func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, chain.ServerError, 0, "") }},
		{"400 context length is final", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeFixture(t, 400, "error_context_length.json")
		},
			func(t *testing.T, _ *provider.Response, err error) {
				if pe := wantErr(t, err, "", 400, "context_length_exceeded"); !strings.Contains(pe.Message, "exceeds the maximum number of tokens") {
					t.Errorf("message = %q", pe.Message)
				}
			}},
		{"a blocked prompt is a final content_filter 400", func(t *testing.T) http.HandlerFunc { return providertest.ServeFixture(t, 200, "response_blocked.json") },
			func(t *testing.T, _ *provider.Response, err error) { wantErr(t, err, "", 400, "content_filter") }},
		{"an invalid API key is final and hidden", func(t *testing.T) http.HandlerFunc { return providertest.ServeFixture(t, 400, "error_api_key.json") },
			func(t *testing.T, _ *provider.Response, err error) {
				if pe := wantErr(t, err, "", 502, ""); pe.Type != "upstream_auth_error" {
					t.Errorf("type = %q", pe.Type)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := newAdapter(t, providertest.New(t, tt.handler(t))).Complete(context.Background(), simple)
			tt.check(t, r, err)
		})
	}
}

func TestRequestTargetsAndKeyHeader(t *testing.T) {
	for _, stream := range []bool{false, true} {
		var gotURL string
		f := providertest.New(t, func(w http.ResponseWriter, r *http.Request) {
			gotURL = r.URL.String()
			if stream {
				providertest.ServeSSE(events(t, "stream_text.sse"), 0, nil)(w, r)
			} else {
				providertest.ServeFixture(t, 200, "response_text.json")(w, r)
			}
		})
		p := newAdapter(t, f)
		var err error
		if stream {
			var s provider.Stream
			if s, err = p.Stream(context.Background(), simple); err == nil {
				_, err = providertest.Drain(t, s)
			}
		} else {
			_, err = p.Complete(context.Background(), simple)
		}
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		_, h, _ := f.Received()
		want := "/v1beta/models/gemini-2.5-flash:generateContent"
		if stream {
			want = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
		}
		if gotURL != want || h.Get("X-Goog-Api-Key") != testKey || strings.Contains(gotURL, testKey) {
			t.Errorf("url %q, key header %q", gotURL, h.Get("X-Goog-Api-Key"))
		}
	}
}

func TestNoAnswerReturnsPromptlyOnCancel(t *testing.T) {
	providertest.CheckCancelPromptly(t, newAdapter(t, providertest.New(t, providertest.Hang)), simple)
}

func TestUnconfiguredProviderFailsFinal(t *testing.T) {
	p, err := New(provider.Config{Name: "google"})
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []func() error{
		func() error { _, err := p.Complete(context.Background(), simple); return err },
		func() error { _, err := p.Stream(context.Background(), simple); return err },
	} {
		if pe := wantErr(t, call(), "", 500, ""); pe.Type != "provider_not_configured" || pe.Message != "provider google has no credential configured" {
			t.Errorf("error = %+v", pe)
		}
	}
}

func TestStream(t *testing.T) {
	text := func(t *testing.T) []string { return events(t, "stream_text.sse") }
	const full = "R T:The sky T: is blue because of \"Rayleigh\"\nscattering. F:stop U"
	errorFrame := "data: {\"error\": {\"code\": 503,\"message\": \"The model is overloaded. Please try again later.\",\"status\": \"UNAVAILABLE\"}}\r\n\r\n"
	tests := []struct {
		name    string
		handler func(t *testing.T) http.HandlerFunc
		want    string
		reason  chain.Reason // of the final error; "" with no code means io.EOF
		code    string       // of a final error
	}{
		{"text stream: role, deltas, finish, usage, then EOF", func(t *testing.T) http.HandlerFunc { return providertest.ServeSSE(text(t), 0, nil) }, full, "", ""},
		{"function call stream: one complete tool_calls delta", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeSSE(events(t, "stream_tool.sse"), 0, nil)
		},
			`R C:get_weather{"city":"Paris"} F:tool_calls U`, "", ""},
		{"slow first token still streams", func(t *testing.T) http.HandlerFunc { return providertest.ServeSSE(text(t), 150*time.Millisecond, nil) }, full, "", ""},
		{"the finishReason frame ends the stream without waiting", func(t *testing.T) http.HandlerFunc { return providertest.ServeSSE(text(t), 0, providertest.Hang) }, full, "", ""},
		{"an UNAVAILABLE error frame before the first token is server_error", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeSSE([]string{errorFrame}, 0, nil)
		}, "", chain.ServerError, ""},
		{"cut before the first token is connection_error", func(t *testing.T) http.HandlerFunc { return providertest.ServeSSE(nil, 0, providertest.Cut) }, "", chain.ConnectionError, ""},
		{"cut after the first token is connection_error", func(t *testing.T) http.HandlerFunc { return providertest.ServeSSE(text(t)[:2], 0, providertest.Cut) },
			"R T:The sky T: is blue because of \"Rayleigh\"\nscattering.", chain.ConnectionError, ""},
		{"missing terminator: a clean end before finishReason is connection_error", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeSSE(text(t)[:1], 0, nil)
		}, "R T:The sky", chain.ConnectionError, ""},
		{"malformed chunk is server_error", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeSSE([]string{"data: {\"candidates\": [{\"content\": \r\n\r\n"}, 0, nil)
		}, "", chain.ServerError, ""},
		{"a blocked prompt is a final content_filter error", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeSSE([]string{"data: " + string(bytes.Join(bytes.Fields(providertest.Fixture(t, "response_blocked.json")), nil)) + "\r\n\r\n"}, 0, nil)
		}, "", "", "content_filter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := providertest.StreamAll(t, newAdapter(t, providertest.New(t, tt.handler(t))), simple)
			if got := providertest.Summary(cs); got != tt.want {
				t.Errorf("chunks = %s, want %s", got, tt.want)
			}
			providertest.WantEnd(t, err, tt.reason, tt.code, false, testKey)
			for _, c := range cs {
				if c.Content != (strings.Contains(providertest.Summary([]provider.Chunk{c}), "T:") || strings.Contains(providertest.Summary([]provider.Chunk{c}), "C:")) {
					t.Errorf("Content = %v for %s", c.Content, c.Data)
				}
				if c.UsageOnly && (c.Usage == nil || *c.Usage != provider.Usage{PromptTokens: 8, CompletionTokens: 39} && *c.Usage != provider.Usage{PromptTokens: 61, CompletionTokens: 59}) {
					t.Errorf("usage = %+v", c.Usage)
				}
			}
		})
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
		{"503 is server_error", func(t *testing.T) http.HandlerFunc {
			return providertest.ServeFixture(t, 503, "error_unavailable.json")
		}, chain.ServerError, ""},
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
	s, err := newAdapter(t, providertest.New(t, providertest.ServeSSE(events(t, "stream_text.sse")[:1], 0, providertest.Hang))).Stream(context.Background(), simple)
	if err != nil {
		t.Fatal(err)
	}
	providertest.CheckCloseUnblocksRecv(t, s, 2) // role and first text
}

func TestConversationWithToolsRoundTrip(t *testing.T) {
	in := providertest.Fixture(t, "openai_conversation.json")
	orig := bytes.Clone(in)
	f := providertest.New(t, providertest.ServeFixture(t, 200, "response_tool.json"))
	if _, err := newAdapter(t, f).Complete(context.Background(), &provider.Request{Body: in, Model: "gemini-2.5-flash"}); err != nil {
		t.Fatal(err)
	}
	got, _, _ := f.Received()
	providertest.JSONEqual(t, got, providertest.Fixture(t, "gemini_conversation.json"))
	if !bytes.Equal(in, orig) {
		t.Error("the request body was modified")
	}
}

func TestBuildBody(t *testing.T) {
	tests := []struct {
		name, in, want, param string
	}{
		{"a string prompt, no generation config",
			`{"messages":[{"role":"user","content":"Hi"}],"seed":3}`,
			`{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`, ""},
		{"max_tokens, a single stop string, json_schema, a named tool choice",
			`{"max_tokens":9,"stop":"END","response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}},"messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
			`{"contents":[{"role":"user","parts":[{"text":"Hi"}]}],"generationConfig":{"maxOutputTokens":9,"stopSequences":["END"],"responseMimeType":"application/json","responseJsonSchema":{"type":"object"}},"tools":[{"functionDeclarations":[{"name":"f"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}}}`, ""},
		{"json_object and a JSON object tool result",
			`{"response_format":{"type":"json_object"},"messages":[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":""}}]},{"role":"tool","tool_call_id":"c1","content":"{\"ok\":true}"}]}`,
			`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"ok":true}}}]}],"generationConfig":{"responseMimeType":"application/json"}}`, ""},
		{"a tool result for an unknown call is a 400", `{"messages":[{"role":"tool","tool_call_id":"x","content":"1"}]}`, "", "messages[0].tool_call_id"},
		{"an image URL without a known extension is a 400", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x.test/img"}}]}]}`, "", "messages[0].content[0].image_url.url"},
		{"an unknown response_format is a 400", `{"messages":[],"response_format":{"type":"yaml"}}`, "", "response_format.type"},
		{"missing messages is a 400", `{}`, "", "messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := buildBody([]byte(tt.in))
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
