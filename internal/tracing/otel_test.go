package tracing

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/provider"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func recording(content bool) (*otelTracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	p := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	return &otelTracer{provider: p, tracer: p.Tracer(scope), content: content}, exp
}

func attrMap(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// Prompts and answers reach an attempt span only when content recording is on.
func TestContentOnlyWhenTurnedOn(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"my secret prompt"}]}`)
	answer := []byte(`{"model":"m-1","choices":[{"index":0,"message":{"role":"assistant","content":"the answer"}}]}`)
	for _, content := range []bool{false, true} {
		tr, exp := recording(content)
		_, span := tr.Attempt(context.Background(), completion.AttemptStart{Model: "openai/m", Wire: "openai", Body: body})
		span.End(completion.AttemptEnd{Line: chain.Attempt{Model: "openai/m", Status: chain.Served}, Output: answer,
			Usage: &provider.Usage{PromptTokens: 3, CompletionTokens: 2}})
		spans := exp.GetSpans()
		if len(spans) != 1 {
			t.Fatalf("%d spans, want 1", len(spans))
		}
		a := attrMap(spans[0].Attributes)
		in, out := a[AttrInput].AsString(), a[AttrOutput].AsString()
		if content && (in != `[{"role":"user","content":"my secret prompt"}]` || out != `[{"role":"assistant","content":"the answer"}]`) {
			t.Errorf("content on: input %q, output %q; want the messages and the answer's", in, out)
		}
		if !content && (in != "" || out != "") {
			t.Errorf("content off: input %q, output %q recorded", in, out)
		}
	}
}

// error.type names what ended an attempt: its failover reason, or what broke a served stream.
func TestErrorType(t *testing.T) {
	for _, tc := range []struct {
		end  completion.AttemptEnd
		want string
	}{
		{completion.AttemptEnd{Line: chain.Attempt{Status: chain.Failed, Reason: chain.RateLimit}}, "rate_limit"},
		{completion.AttemptEnd{Line: chain.Attempt{Status: chain.Served}}, ""},
		{completion.AttemptEnd{Line: chain.Attempt{Status: chain.Served}, Err: &completion.Interruption{Code: "stream_stalled"}}, "stream_stalled"},
		{completion.AttemptEnd{Line: chain.Attempt{Status: chain.Served}, Err: chain.ErrCanceled}, "canceled"},
		{completion.AttemptEnd{Line: chain.Attempt{Status: chain.Served}, Err: errors.New("eof")}, "stream_interrupted"},
	} {
		if got := errorType(tc.end); got != tc.want {
			t.Errorf("errorType(%+v) = %q, want %q", tc.end, got, tc.want)
		}
	}
}

// An attempt on one deployment of a model served by several names that deployment's provider;
// an attempt of a model served by one provider carries no such attribute.
func TestAttemptNamesItsDeployment(t *testing.T) {
	for _, deployment := range []string{"", "bedrock-eu"} {
		tr, exp := recording(false)
		_, span := tr.Attempt(context.Background(), completion.AttemptStart{Model: "anthropic/claude", Provider: deployment, Wire: "bedrock"})
		span.End(completion.AttemptEnd{Line: chain.Attempt{Model: "anthropic/claude", Provider: deployment, Status: chain.Served}})
		a := attrMap(exp.GetSpans()[0].Attributes)
		got, ok := a[AttrDeployment]
		if ok != (deployment != "") || got.AsString() != deployment || a[AttrProvider].AsString() != "aws.bedrock" {
			t.Errorf("deployment %q: %s = %q (set %v), %s = %q", deployment, AttrDeployment, got.AsString(), ok, AttrProvider, a[AttrProvider].AsString())
		}
	}
}

// Issue 34 item 15: the server span of a request its client cancelled before any answer records
// status 499, as the access line does, not the 200 nothing was sent for.
func TestTheServerSpanOfACancelledRequestSays499(t *testing.T) {
	tr, exp := recording(false)
	h := tr.Handler("POST /v1/chat/completions", http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/v1/chat/completions", nil).WithContext(ctx))
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	if got := attrMap(spans[0].Attributes)["http.response.status_code"].AsInt64(); got != 499 {
		t.Errorf("http.response.status_code = %d, want 499", got)
	}
}
