package gateway_test

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
	"github.com/secureai-gateway/gateway/internal/tracing"
	"github.com/secureai-gateway/gateway/internal/tracing/otlptest"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// slowSecondToken streams an answer whose second token comes 300 ms after its first, so a span
// that ended at the first token would be visibly short.
func slowSecondToken(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(data string) {
		_, _ = io.WriteString(w, "data: "+data+"\n\n")
		w.(http.Flusher).Flush()
	}
	const head = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"slow-1","choices":`
	send(head + `[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}`)
	select {
	case <-time.After(300 * time.Millisecond):
	case <-r.Context().Done():
		return
	}
	send(head + `[{"index":0,"delta":{"content":" world"},"finish_reason":null}]}`)
	send(head + `[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	send(head + `[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`)
	send("[DONE]")
}

// With an OTLP endpoint configured, the local server exports a failover request as one server
// span — the caller's traceparent its parent — and one `chat {model}` child span per attempt in
// the GenAI conventions; each provider receives its attempt's span as the parent, and no span
// carries the prompt. A streamed attempt's span lasts until its last chunk.
func TestTracesOfAFailoverReachAnOTLPReceiver(t *testing.T) {
	receiver := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.URL)

	up := gatewaykit.NewUpstream(openaifake.New(0))
	fakeSrv, slowSrv := httptest.NewServer(up.Handler("fake")), httptest.NewServer(http.HandlerFunc(slowSecondToken))
	defer fakeSrv.Close()
	defer slowSrv.Close()
	cat := &catalog.Catalog{
		Providers: map[string]catalog.ProviderConfig{
			"fake": {Type: "openai", BaseURL: fakeSrv.URL + "/v1"},
			"slow": {Type: "openai", BaseURL: slowSrv.URL + "/v1"},
		},
		Models: map[string]*catalog.Model{
			"fake/error-500": {Name: "fake/error-500", Provider: "fake", Upstream: "error-500"},
			"fake/ok":        {Name: "fake/ok", Provider: "fake", Upstream: "ok"},
			"slow/ok":        {Name: "slow/ok", Provider: "slow", Upstream: "slow-1"},
		},
	}
	env := gatewaykit.Env()
	// The test's client is a trusted caller: its traceparent is the request's parent.
	env.Tracing = tracing.Config{OTLP: true, TrustedCallers: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	srv := gatewaykit.Serve(t, cat, env, gatewaykit.Unvalidated())
	secret := srv.Admin

	const prompt = "the secret prompt text 4711"
	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	var requestID string // the failover request's X-Request-Id
	post := func(body string, traceparent string) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		if traceparent != "" {
			req.Header.Set("traceparent", traceparent)
			req.Header.Set("tracestate", "vendor=callers-own-state")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if traceparent != "" {
			requestID = res.Header.Get("X-Request-Id")
		}
		return res.StatusCode, string(b)
	}
	if status, body := post(`{"model":"fake/error-500","fallback_models":["fake/ok"],"messages":[{"role":"user","content":"`+prompt+`"}]}`,
		"00-"+callerTrace+"-"+callerSpan+"-01"); status != 200 {
		t.Fatalf("failover request: %d %s", status, body)
	}
	if status, body := post(`{"model":"slow/ok","stream":true,"messages":[{"role":"user","content":"`+prompt+`"}]}`, ""); status != 200 || !strings.Contains(body, "world") {
		t.Fatalf("streamed request: %d %s", status, body)
	}
	srv.Stop() // shuts the tracer down: every span is exported

	hexID := func(b []byte) string { return hex.EncodeToString(b) }
	requests := receiver.Named("POST /v1/chat/completions")
	failed, served := receiver.Named("chat fake/error-500"), receiver.Named("chat fake/ok")
	if len(requests) != 2 || len(failed) != 1 || len(served) != 1 {
		t.Fatalf("got %d request spans, %d and %d attempt spans; want 2, 1 and 1", len(requests), len(failed), len(served))
	}
	var root *tracev1.Span
	for _, s := range requests {
		if hexID(s.TraceId) == callerTrace {
			root = s
		}
	}
	if root == nil || hexID(root.ParentSpanId) != callerSpan || root.Kind != tracev1.Span_SPAN_KIND_SERVER {
		t.Fatalf("no server span continues the caller's trace %s from span %s: %v", callerTrace, callerSpan, requests)
	}
	if got := otlptest.Attrs(root)["http.response.status_code"].GetIntValue(); got != 200 {
		t.Errorf("request span status code %d, want 200", got)
	}
	if id := otlptest.Attrs(root)["secureai.request_id"].GetStringValue(); id != requestID {
		t.Errorf("request span's secureai.request_id %q, want the answer's X-Request-Id %q", id, requestID)
	}

	want := []struct {
		span  *tracev1.Span
		model string
		index int64
		str   map[string]string
		served,
		failed bool
	}{
		{failed[0], "fake/error-500", 0, map[string]string{"secureai.attempt.status": "failed", "secureai.failover.reason": "server_error", "error.type": "server_error"}, false, true},
		{served[0], "fake/ok", 1, map[string]string{"secureai.attempt.status": "served", "gen_ai.response.model": "ok"}, true, false},
	}
	calls := up.Calls()
	if len(calls) != 2 {
		t.Fatalf("the provider got %d calls, want 2", len(calls))
	}
	for i, w := range want {
		s, a := w.span, otlptest.Attrs(w.span)
		if hexID(s.TraceId) != callerTrace || hexID(s.ParentSpanId) != hexID(root.SpanId) || s.Kind != tracev1.Span_SPAN_KIND_CLIENT {
			t.Errorf("%s: trace %s parent %s kind %v; want trace %s, the request span %s as parent, a client span",
				w.model, hexID(s.TraceId), hexID(s.ParentSpanId), s.Kind, callerTrace, hexID(root.SpanId))
		}
		for k, v := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": w.model} {
			w.str[k] = v
		}
		for k, v := range w.str {
			if got := a[k].GetStringValue(); got != v {
				t.Errorf("%s: %s = %q, want %q", w.model, k, got, v)
			}
		}
		if a["secureai.attempt.index"].GetIntValue() != w.index || a["secureai.attempt.retry"] == nil || a["secureai.attempt.retry"].GetIntValue() != 0 ||
			a["secureai.attempt.served"] == nil || a["secureai.attempt.served"].GetBoolValue() != w.served {
			t.Errorf("%s: index %v, retry %v, served %v; want %d, 0, %v", w.model, a["secureai.attempt.index"], a["secureai.attempt.retry"], a["secureai.attempt.served"], w.index, w.served)
		}
		if _, has := a["error.type"]; has != w.failed {
			t.Errorf("%s: error.type present %v, want %v", w.model, has, w.failed)
		}
		if _, has := a["gen_ai.usage.input_tokens"]; has == w.failed {
			t.Errorf("%s: token usage present %v, want %v", w.model, has, !w.failed)
		} else if has && (a["gen_ai.usage.input_tokens"].GetIntValue() <= 0 || a["gen_ai.usage.output_tokens"].GetIntValue() <= 0) {
			t.Errorf("%s: usage %v / %v, want the provider's counts", w.model, a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"])
		}
		// The provider was told this attempt's span as the parent, in the caller's trace, and
		// nothing of the caller's tracestate (issue 34 item 8), which no span records either.
		if tp, want := calls[i].Header.Get("Traceparent"), "00-"+callerTrace+"-"+hexID(s.SpanId)+"-01"; tp != want {
			t.Errorf("%s: the provider got traceparent %q, want %q", w.model, tp, want)
		}
		if ts := calls[i].Header.Get("Tracestate"); ts != "" {
			t.Errorf("%s: the provider got the caller's tracestate %q", w.model, ts)
		}
		if s.TraceState != "" || root.TraceState != "" {
			t.Errorf("%s: spans record the caller's tracestate %q / %q", w.model, s.TraceState, root.TraceState)
		}
	}

	stream := receiver.Named("chat slow/ok")
	if len(stream) != 1 {
		t.Fatalf("got %d spans of the streamed attempt, want 1", len(stream))
	}
	var streamRoot *tracev1.Span
	for _, s := range requests {
		if s != root {
			streamRoot = s
		}
	}
	st := stream[0]
	if len(streamRoot.ParentSpanId) != 0 || hexID(st.ParentSpanId) != hexID(streamRoot.SpanId) {
		t.Errorf("the streamed request's span should be a root and its attempt's parent")
	}
	if d := time.Duration(st.EndTimeUnixNano - st.StartTimeUnixNano); d < 300*time.Millisecond {
		t.Errorf("the streamed attempt's span lasted %v: it ended before the stream's last chunk (300 ms after its first)", d)
	}
	if st.EndTimeUnixNano > streamRoot.EndTimeUnixNano {
		t.Error("the streamed attempt's span ends after its request's")
	}
	if a := otlptest.Attrs(st); a["gen_ai.usage.output_tokens"].GetIntValue() != 2 || a["gen_ai.response.model"].GetStringValue() != "slow-1" {
		t.Errorf("streamed attempt: output tokens %v, response model %v; want 2 and slow-1 from the stream", a["gen_ai.usage.output_tokens"], a["gen_ai.response.model"])
	}

	// Content is off by default: the prompt is in no span.
	for _, s := range receiver.Spans() {
		raw, _ := proto.Marshal(s)
		if strings.Contains(string(raw), prompt) {
			t.Errorf("span %q carries the prompt", s.Name)
		}
	}
}
