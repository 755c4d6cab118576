package responsesapi_test

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
	"github.com/secureai-gateway/gateway/internal/api/responsesapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
)

// FuzzResponsesRequest feeds arbitrary bodies through POST /v1/responses in front of a fake
// upstream that, as a real provider does, refuses a body that is not JSON: the handler never
// panics, never answers 500 and never sends the provider a body that is not JSON — bad input is a
// 4xx in OpenAI's error envelope, an exhausted chain a 502 all_models_failed, and a served answer
// is a Response object or an event stream whose every frame is JSON of its event's type, with
// sequence numbers from 0, ending in a terminal event.
func FuzzResponsesRequest(f *testing.F) {
	svc := gatewaykit.FakeService(f, gatewaykit.StrictJSON(openaifake.New(time.Second)),
		"ok", "tools", "error-500", "error-429", "context-length", "stream-error", "cut")
	h := &responsesapi.Handler{Completions: svc, MaxBody: 64 << 10}
	serve := httpapi.Serve(responsesapi.Render, h.Responses)
	key := &apikey.Key{ID: "k", FailoverDefaults: &chain.Defaults{Models: []string{"fake/error-500", "fake/ok"}}}

	for _, s := range []string{
		`{"model":"fake/ok","input":"hi"}`,
		`{"model":"fake/ok","input":"hi","stream":true}`,
		`{"model":"fake/ok","instructions":"Be terse.","input":[{"role":"user","content":"hi"}],"tools":[{"type":"function","name":"f","strict":true}]}`,
		`{"model":"fake/tools","stream":true,"tool_choice":"auto","parallel_tool_calls":true,"store":false,"include":["reasoning.encrypted_content"],` +
			`"client_metadata":{"session_id":"s"},"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]},` +
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"run echo hi"}]},{"type":"reasoning","summary":[],"encrypted_content":"x"},` +
			`{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"echo hi\"}","call_id":"c1"},{"type":"function_call_output","call_id":"c1","output":"hi"}],` +
			`"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object"}},{"type":"namespace","name":"ns","tools":[{"type":"function","name":"g"}]},{"type":"web_search"}]}`,
		`{"model":"fake/tools","input":[{"type":"additional_tools","tools":[{"type":"custom","name":"exec"}]},{"role":"user","content":"q"},` +
			`{"type":"custom_tool_call","call_id":"c","name":"exec","input":"js"},{"type":"custom_tool_call_output","call_id":"c","output":[{"type":"input_text","text":"ok"}]}]}`,
		`{"models":["fake/error-500",{"model":"fake/ok","timeout_ms":2000}],"input":[{"role":"user","content":"hi"}],"stream":true}`,
		`{"model":"fake/error-429","fallback_models":["fake/tools"],"input":[{"role":"user","content":"x"}],"max_output_tokens":5}`,
		`{"model":"fake/context-length","input":[{"role":"user","content":"x"}],"stream":true}`,
		`{"model":"fake/stream-error","input":[{"role":"user","content":"x"}],"stream":true}`,
		`{"model":"fake/cut","input":[{"role":"user","content":"x"}],"stream":true}`,
		`{"model":"fake/ok","input":[{"role":"user","content":"x"}],"text":{"format":{"type":"json_schema","name":"a","schema":{"type":"object"},"strict":true}}}`,
		`{"model":"fake/ok","input":"x","previous_response_id":"resp_1"}`,
		`{"model":"fake/ok","input":[{"type":"item_reference","id":"msg_1"}]}`,
		`{"model":"nope","input":"x"}`,
		`{"model":"fake/ok","input":[]}`,
		`{"model":1,"input":1,"stream":"y","temperature":9}`,
		`{"model":"fake/ok","input":"x","max_output_tokens":1e400}`,
		`[]`, `null`, ``, `{`, `{"a":}`, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx, cancel := context.WithTimeout(identity.WithKey(context.Background(), key), 3*time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/responses", strings.NewReader(string(body)))
		rec := httptest.NewRecorder()
		serve(rec, req)
		out := rec.Body.String()
		switch {
		case rec.Code == http.StatusOK && rec.Header().Get("Content-Type") == "text/event-stream":
			checkStream(t, out)
		case rec.Code == http.StatusOK:
			if v := gjson.Parse(out); !json.Valid([]byte(out)) || v.Get("object").String() != "response" || !v.Get("output").IsArray() {
				t.Fatalf("200 that is not a Response object for %q: %s", body, out)
			}
		case rec.Code == http.StatusBadGateway:
			if gjson.Get(out, "error.code").String() != "all_models_failed" {
				t.Fatalf("502 that is not an exhausted chain: %s", out)
			}
		case rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable:
			t.Fatalf("status %d for %q: %s", rec.Code, body, out)
		}
		if strings.Contains(out, gatewaykit.NotJSON) {
			t.Fatalf("the gateway sent the provider a body that is not JSON for %q", body)
		}
		if rec.Code >= 400 {
			e := gjson.Get(out, "error")
			if e.Get("message").String() == "" || e.Get("type").String() == "" {
				t.Fatalf("status %d without OpenAI's error envelope: %s", rec.Code, out)
			}
		}
	})
}

// checkStream checks that every frame of a Responses stream is named and is JSON of that type,
// with sequence numbers from 0, and that it ends with response.completed, .incomplete or .failed.
func checkStream(t *testing.T, body string) {
	t.Helper()
	var name, last string
	seq := int64(0)
	for line := range strings.Lines(body) {
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data := line[len("data: "):]
			if !json.Valid([]byte(data)) || gjson.Get(data, "type").String() != name || gjson.Get(data, "sequence_number").Int() != seq {
				t.Fatalf("frame %d %q: %s", seq, name, data)
			}
			last = name
			seq++
		}
	}
	if last != "response.completed" && last != "response.incomplete" && last != "response.failed" {
		t.Fatalf("stream ends with %q:\n%s", last, body)
	}
}
