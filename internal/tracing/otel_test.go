package tracing

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/provider"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
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

// sampled builds a tracer as newOTel does, recording what its sampler keeps.
func sampled(c Config) (*otelTracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	opts := []sdktrace.TracerProviderOption{sdktrace.WithSyncer(exp)}
	if s := sampler(c); s != nil {
		opts = append(opts, sdktrace.WithSampler(s))
	}
	p := sdktrace.NewTracerProvider(opts...)
	return &otelTracer{provider: p, tracer: p.Tracer(scope), trusted: c.TrustedCallers}, exp
}

// Issue 34 item 8: the caller's tracestate is neither sent to a provider nor recorded; only a
// trusted caller's traceparent is a request's parent (anyone else's is a link, and the request
// starts its own trace); and what is sampled is the operator's choice — a ratio, and a trusted
// caller's sampled flag — never an outside caller's.
func TestTheCallersTraceContextIsTheOperatorsToTrust(t *testing.T) {
	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	zero := 0.0
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, tc := range []struct {
		name     string
		c        Config
		peer     string
		flags    string // the caller's trace flags
		recorded bool
		parent   bool // the caller's span is the server span's parent (else a link)
	}{
		{"an outside caller, sampled", Config{TrustedCallers: trusted}, "192.0.2.1:1", "01", true, false},
		{"an outside caller asks for sampling the operator turned off", Config{TrustedCallers: trusted, SampleRatio: &zero}, "192.0.2.1:1", "01", false, false},
		{"an outside caller asks for no sampling", Config{TrustedCallers: trusted}, "192.0.2.1:1", "00", true, false},
		{"a trusted caller, sampled", Config{TrustedCallers: trusted, SampleRatio: &zero}, "10.1.2.3:1", "01", true, true},
		{"a trusted caller, not sampled", Config{TrustedCallers: trusted}, "10.1.2.3:1", "00", false, true},
		{"no caller trusted", Config{}, "10.1.2.3:1", "01", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, exp := sampled(tc.c)
			var upstream http.Header
			provider := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { upstream = r.Header.Clone() }))
			defer provider.Close()
			client := tr.Client(provider.Client())
			h := tr.Handler("POST /v1/chat/completions", http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				ctx, span := tr.Attempt(r.Context(), completion.AttemptStart{Model: "openai/m", Wire: "openai"})
				req, _ := http.NewRequestWithContext(ctx, "POST", provider.URL, nil)
				if res, err := client.Do(req); err == nil {
					res.Body.Close()
				}
				span.End(completion.AttemptEnd{Line: chain.Attempt{Model: "openai/m", Status: chain.Served}})
			}))
			req := httptest.NewRequest("POST", "/v1/chat/completions", nil)
			req.RemoteAddr = tc.peer
			req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-"+tc.flags)
			req.Header.Set("tracestate", "vendor=callers-secret")
			h.ServeHTTP(httptest.NewRecorder(), req)

			if ts := upstream.Get("tracestate"); ts != "" {
				t.Errorf("the provider got tracestate %q", ts)
			}
			tp := upstream.Get("traceparent")
			if tc.parent != strings.Contains(tp, callerTrace) {
				t.Errorf("the provider got traceparent %q; in the caller's trace: %v, want %v", tp, strings.Contains(tp, callerTrace), tc.parent)
			}
			spans := exp.GetSpans()
			if (len(spans) == 2) != tc.recorded {
				t.Fatalf("%d spans recorded, want recorded=%v", len(spans), tc.recorded)
			}
			for _, s := range spans {
				if s.SpanContext.TraceState().Len() != 0 || s.Parent.TraceState().Len() != 0 {
					t.Errorf("span %s records the caller's tracestate", s.Name)
				}
				if s.SpanKind != trace.SpanKindServer {
					continue
				}
				inCallers := s.SpanContext.TraceID().String() == callerTrace && s.Parent.SpanID().String() == callerSpan
				linked := len(s.Links) == 1 && s.Links[0].SpanContext.SpanID().String() == callerSpan && s.Links[0].SpanContext.TraceState().Len() == 0
				if inCallers != tc.parent || linked == tc.parent {
					t.Errorf("server span: in the caller's trace %v, linked to it %v; want parent=%v", inCallers, linked, tc.parent)
				}
			}
		})
	}
}
