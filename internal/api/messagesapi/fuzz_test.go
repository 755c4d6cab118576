package messagesapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/messagesapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
)

// FuzzMessagesRequest feeds arbitrary bodies through POST /v1/messages in front of a fake
// upstream that, as a real provider does, refuses a body that is not JSON: the handler never
// panics, never answers 500 and never sends the provider a body that is not JSON — bad input is a
// 4xx in Anthropic's error envelope, an exhausted chain its 529 overloaded_error, and a served
// answer is a message object or an event stream whose every frame is JSON of its event's type.
func FuzzMessagesRequest(f *testing.F) {
	svc := gatewaykit.FakeService(f, gatewaykit.StrictJSON(openaifake.New(time.Second)),
		"ok", "tools", "error-500", "error-429", "context-length", "stream-error", "cut")
	h := &messagesapi.Handler{Completions: svc, MaxBody: 64 << 10}
	serve := httpapi.Serve(messagesapi.Render, h.Messages)
	key := &apikey.Key{ID: "k", FailoverDefaults: &chain.Defaults{Models: []string{"fake/error-500", "fake/ok"}}}

	for _, s := range []string{
		`{"model":"fake/ok","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"fake/ok","max_tokens":64,"messages":[{"role":"user","content":"hi"}],"stream":true}`,
		`{"model":"fake/tools","max_tokens":64,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"q"}]},` +
			`{"role":"system","content":"# Environment"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"t1","name":"Read","input":{"p":1}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"r"}],"is_error":true}]}],` +
			`"tools":[{"name":"Read","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"any","disable_parallel_tool_use":true},"stream":true}`,
		`{"models":["fake/error-500",{"model":"fake/ok","timeout_ms":2000}],"max_tokens":10,"messages":[{"role":"user","content":"hi"}],"stream":true}`,
		`{"model":"fake/error-429","fallback_models":["fake/tools"],"max_tokens":1,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"fake/error-500","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"fake/context-length","max_tokens":1,"messages":[{"role":"user","content":"x"}],"stream":true}`,
		`{"model":"fake/stream-error","max_tokens":1,"messages":[{"role":"user","content":"x"}],"stream":true}`,
		`{"model":"fake/cut","max_tokens":1,"messages":[{"role":"user","content":"x"}],"stream":true}`,
		`{"model":"fake/ok","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]}`,
		`{"model":"fake/ok","max_tokens":1,"messages":[{"role":"user","content":"x"}],"fallbacks":["fake/tools"]}`,
		`{"model":"nope","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"fake/ok","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"fake/ok","max_tokens":1,"messages":{}}`,
		`{"model":"fake/ok","max_tokens":1,"messages":[{"role":"robot","content":"x"}],"temperature":3}`,
		`{"model":1,"max_tokens":"x","messages":"x","stream":"y"}`,
		`{"model":"fake/ok","max_tokens":1e400,"messages":[1]}`,
		`[]`, `null`, ``, `{`, `{"a":}`, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx, cancel := context.WithTimeout(identity.WithKey(context.Background(), key), 3*time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/messages", strings.NewReader(string(body)))
		rec := httptest.NewRecorder()
		serve(rec, req)
		out := rec.Body.String()
		switch {
		case rec.Code == http.StatusOK && rec.Header().Get("Content-Type") == "text/event-stream":
			checkStream(t, out)
		case rec.Code == http.StatusOK:
			if v := gjson.Parse(out); !json.Valid([]byte(out)) || v.Get("type").String() != "message" || !v.Get("content").IsArray() {
				t.Fatalf("200 that is not a message object for %q: %s", body, out)
			}
		case rec.Code == messagesapi.StatusOverloaded:
			if gjson.Get(out, "error.type").String() != "overloaded_error" {
				t.Fatalf("529 that is not overloaded_error: %s", out)
			}
		case rec.Code >= 500:
			t.Fatalf("status %d for %q: %s", rec.Code, body, out)
		}
		if strings.Contains(out, gatewaykit.NotJSON) {
			t.Fatalf("the gateway sent the provider a body that is not JSON for %q", body)
		}
		if rec.Code >= 400 {
			e := gjson.Parse(out)
			if e.Get("type").String() != "error" || e.Get("error.type").String() == "" || e.Get("error.message").String() == "" {
				t.Fatalf("status %d without Anthropic's error envelope: %s", rec.Code, out)
			}
		}
	})
}

// checkStream checks that every frame of an Anthropic stream is named and is JSON of that type,
// and that the stream ends with message_stop or an error event.
func checkStream(t *testing.T, body string) {
	t.Helper()
	var name, last string
	for line := range strings.Lines(body) {
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data := line[len("data: "):]
			if !json.Valid([]byte(data)) || gjson.Get(data, "type").String() != name {
				t.Fatalf("frame %q: %s", name, data)
			}
			last = name
		}
	}
	if last != "message_stop" && last != "error" {
		t.Fatalf("stream ends with %q:\n%s", last, body)
	}
}
