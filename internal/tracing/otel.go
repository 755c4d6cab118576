package tracing

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strconv"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// serviceName is service.name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise.
const serviceName = "secureai-gateway"

// scope is the instrumentation scope the gateway's spans are recorded under.
const scope = "github.com/secureai-gateway/gateway"

// otelTracer records spans with the OpenTelemetry SDK and exports them over OTLP/HTTP in batches.
type otelTracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	// W3C Trace Context: read from the caller, written to providers. Never the global
	// propagator, so nothing else in the process changes what is sent.
	propagator propagation.TraceContext
	content    bool
	lambda     bool
	trusted    []netip.Prefix // callers whose traceparent is a request's parent
}

func newOTel(ctx context.Context, c Config) (*otelTracer, error) {
	// Configured by the OTEL_EXPORTER_OTLP_* variables; an option here overrides them.
	var opts []otlptracehttp.Option
	if c.Endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(c.Endpoint))
	}
	if c.SigV4 {
		if c.Credentials == nil || c.Region == "" {
			return nil, errors.New("signing OTLP exports (SECUREAI_TRACES_SIGV4) needs AWS credentials and a region (AWS_REGION)")
		}
		opts = append(opts, otlptracehttp.WithHTTPClient(&http.Client{
			Transport: &sigV4Transport{base: http.DefaultTransport, creds: c.Credentials, region: c.Region, signer: v4.NewSigner()},
		}))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", serviceName)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK())
	if err != nil {
		return nil, err
	}
	provider := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if s := sampler(c); s != nil {
		provider = append(provider, sdktrace.WithSampler(s))
	}
	p := sdktrace.NewTracerProvider(provider...)
	return &otelTracer{provider: p, tracer: p.Tracer(scope), content: c.Content, lambda: c.Lambda, trusted: c.TrustedCallers}, nil
}

// sampler is the operator's: the SDK's own when OTEL_TRACES_SAMPLER names one (nil here), else
// SampleRatio of the traces the gateway starts, and a trusted caller's decision for the traces it
// continues (only a trusted caller's traceparent becomes a parent: Handler).
func sampler(c Config) sdktrace.Sampler {
	if c.EnvSampler {
		return nil
	}
	ratio := 1.0
	if c.SampleRatio != nil {
		ratio = *c.SampleRatio
	}
	return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
}

// Handler implements Tracer: a server span to the response's end (a stream's last byte). A
// trusted caller's traceparent is its parent; anyone else's is a link, and the span starts a trace
// of the gateway's own, sampled by the operator's sampler alone. The caller's tracestate is
// dropped either way: the providers are sent, and the spans record, the gateway's trace context
// only. In Lambda the spans are exported before the invocation ends.
func (t *otelTracer) Handler(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", route))}
		caller := trace.SpanContextFromContext(t.propagator.Extract(context.Background(), propagation.HeaderCarrier(r.Header)))
		if caller.IsValid() {
			caller = caller.WithTraceState(trace.TraceState{})
			if t.trusts(r) {
				ctx = trace.ContextWithRemoteSpanContext(ctx, caller)
			} else {
				opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: caller}))
			}
		}
		ctx, span := t.tracer.Start(ctx, route, opts...)
		sw := &httpapi.StatusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r.WithContext(ctx))
		status := sw.StatusOf(r) // 499 for a caller gone before any answer
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if id := w.Header().Get("X-Request-Id"); id != "" {
			span.SetAttributes(attribute.String("secureai.request_id", id))
		}
		if status >= 500 {
			span.SetAttributes(attribute.String(AttrErrorType, strconv.Itoa(status)))
			span.SetStatus(codes.Error, "")
		}
		span.End()
		if t.lambda {
			_ = t.provider.ForceFlush(context.WithoutCancel(r.Context()))
		}
	})
}

// trusts reports whether r comes from a trusted caller (Config.TrustedCallers).
func (t *otelTracer) trusts(r *http.Request) bool {
	if len(t.trusted) == 0 {
		return false
	}
	// A local server's RemoteAddr has a port; a Lambda request's is the API's sourceIp alone.
	addr, err := netip.ParseAddr(r.RemoteAddr)
	if ap, perr := netip.ParseAddrPort(r.RemoteAddr); perr == nil {
		addr, err = ap.Addr(), nil
	}
	if err != nil {
		return false
	}
	for _, p := range t.trusted {
		if p.Contains(addr.Unmap()) {
			return true
		}
	}
	return false
}

// Attempt implements completion.Tracer: a client span `chat {model}`.
func (t *otelTracer) Attempt(ctx context.Context, a completion.AttemptStart) (context.Context, completion.AttemptSpan) {
	ctx, span := t.tracer.Start(ctx, operation+" "+a.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String(AttrOperation, operation),
			attribute.String(AttrProvider, providerName(a.Wire)),
			attribute.String(AttrRequestModel, a.Model),
			attribute.Int(AttrIndex, a.Index)))
	if a.Provider != "" {
		span.SetAttributes(attribute.String(AttrDeployment, a.Provider))
	}
	if t.content {
		span.SetAttributes(attribute.String(AttrInput, gjson.GetBytes(a.Body, "messages").Raw))
	}
	return ctx, otelAttempt{span: span, content: t.content}
}

type otelAttempt struct {
	span    trace.Span
	content bool
}

func (s otelAttempt) End(e completion.AttemptEnd) {
	s.span.SetAttributes(
		attribute.String(AttrStatus, string(e.Line.Status)),
		attribute.Int(AttrRetry, e.Line.Retry),
		attribute.Bool(AttrServed, e.Line.Status == chain.Served))
	if e.Line.Reason != "" {
		s.span.SetAttributes(attribute.String(AttrReason, string(e.Line.Reason)))
	}
	if e.ResponseModel != "" {
		s.span.SetAttributes(attribute.String(AttrResponseModel, e.ResponseModel))
	}
	if u := e.Usage; u != nil {
		s.span.SetAttributes(attribute.Int(AttrInputTokens, u.PromptTokens), attribute.Int(AttrOutputTokens, u.CompletionTokens))
	}
	if s.content && e.Output != nil {
		s.span.SetAttributes(attribute.String(AttrOutput, gjson.GetBytes(e.Output, "choices.#.message").Raw))
	}
	if et := errorType(e); et != "" {
		s.span.SetAttributes(attribute.String(AttrErrorType, et))
		s.span.SetStatus(codes.Error, "")
	}
	s.span.End()
}

// Client implements Tracer: each provider request carries its attempt's traceparent. The
// gateway never forwards the caller's headers upstream; this one is the gateway's own.
func (t *otelTracer) Client(c *http.Client) *http.Client {
	traced := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	traced.Transport = propagating{base: base, propagator: t.propagator}
	return &traced
}

// Shutdown implements Tracer.
func (t *otelTracer) Shutdown(ctx context.Context) error { return t.provider.Shutdown(ctx) }

type propagating struct {
	base       http.RoundTripper
	propagator propagation.TraceContext
}

func (p propagating) RoundTrip(r *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(r.Context()).IsValid() {
		return p.base.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper must not change the request it is given
	p.propagator.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	return p.base.RoundTrip(r)
}
