// Package tracing is the one seam between the gateway and a tracing backend: OpenTelemetry
// (OTLP over HTTP, configured by the standard OTEL_EXPORTER_OTLP_* variables) or the AWS X-Ray
// SDK. Both record the same thing under the same names — one span per request and one child span
// per attempt, `chat {model}`, in the OpenTelemetry GenAI semantic conventions — so an operator
// reads a failover the same way in either. The X-Ray SDK for Go ends support on 2027-02-25 and
// X-Ray ingests OTLP itself, so OTLP is the cloud's default: a function exports to its region's
// X-Ray OTLP endpoint (https://xray.<region>.amazonaws.com/v1/traces, Transaction Search on),
// each export signed with SigV4 under the function's role. The X-Ray SDK stays as an option for
// accounts without Transaction Search. Nothing else imports the X-Ray SDK or the OpenTelemetry
// SDK: replacing either means replacing a file here. The core reports attempts through
// completion.Tracer and knows neither.
//
// SECUREAI_TRACES chooses: otlp (the default in Lambda; locally when an OTLP endpoint is set),
// xray, or off. Off, nothing is wrapped and no span is allocated. Prompts and completions are
// never recorded unless SECUREAI_TRACE_CONTENT turns it on.
package tracing

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/envvar"
)

// Tracer is a configured backend.
type Tracer interface {
	completion.Tracer
	// Handler wraps a chat route's handler with the request's span, named after route. A W3C
	// traceparent from the caller is its parent where the backend honours one (OpenTelemetry).
	Handler(route string, h http.Handler) http.Handler
	// Client traces the provider calls made with c and carries the attempt's trace context to
	// the provider (traceparent, or X-Ray's own header).
	Client(c *http.Client) *http.Client
	// Shutdown exports what is still buffered and stops the exporter.
	Shutdown(ctx context.Context) error
}

// Config is how tracing is set up, read from the environment by ParseConfig.
type Config struct {
	// OTLP is on when SECUREAI_TRACES is otlp (its default in Lambda, and locally when
	// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set), unless
	// OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none says otherwise. The exporter reads the rest
	// of the OTEL_EXPORTER_OTLP_* variables itself (headers, timeout, compression).
	OTLP bool
	// Endpoint is the OTLP traces URL when no OTEL_EXPORTER_OTLP_* variable names one: in
	// Lambda, the region's X-Ray OTLP endpoint (XRayEndpoint); "" leaves the exporter's own
	// default.
	Endpoint string
	// SigV4 signs every export with AWS credentials for the xray service
	// (SECUREAI_TRACES_SIGV4); by default on exactly when the export goes to an X-Ray OTLP
	// endpoint, off for a collector (the ADOT layer's, which signs itself).
	SigV4 bool
	// Region is the region the signature is for: AWS_REGION (AWS_DEFAULT_REGION).
	Region string
	// Credentials sign the exports when SigV4 is on; the cloud sets them from the function's
	// AWS configuration (its role). Not read from the environment.
	Credentials aws.CredentialsProvider
	// XRay is on when SECUREAI_TRACES is xray (Lambda's active tracing opens the segment),
	// unless AWS_XRAY_SDK_DISABLED says otherwise.
	XRay bool
	// Content is SECUREAI_TRACE_CONTENT, default false: record the request's messages and a
	// whole answer's choices on attempt spans (OpenTelemetry only).
	Content bool
	// Lambda: spans are exported before each invocation ends, since a frozen instance exports
	// nothing.
	Lambda bool
	// SampleRatio is SECUREAI_TRACE_SAMPLE_RATIO, nil (unset) for 1: the share of requests traced,
	// decided by the gateway (parent-based for a trusted caller: its sampled flag decides). Unused
	// when OTEL_TRACES_SAMPLER names the SDK's sampler instead (EnvSampler).
	SampleRatio *float64
	EnvSampler  bool
	// TrustedCallers is SECUREAI_TRACE_TRUSTED_CALLERS: the addresses (or CIDRs) whose W3C
	// traceparent is a request's parent. Anyone else's is only linked: the request starts a trace
	// of its own, so an outside caller neither decides what is sampled nor names the trace the
	// providers see. A caller's tracestate is never kept, sent on or recorded.
	TrustedCallers []netip.Prefix
}

// The values of SECUREAI_TRACES.
const (
	TracesOTLP = "otlp"
	TracesXRay = "xray"
	TracesOff  = "off"
)

// XRayEndpoint is the OTLP traces endpoint of X-Ray in region (it needs Transaction Search).
func XRayEndpoint(region string) string {
	return "https://xray." + region + ".amazonaws.com/v1/traces"
}

// ParseConfig reads the tracing configuration through r; a malformed value is r's error.
func ParseConfig(r *envvar.Reader) Config {
	const want = "an http:// or https:// URL such as http://localhost:4318"
	// The endpoint the exporter will use: the traces one, else the base one (plus /v1/traces).
	configured := cmp.Or(r.Check("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "", want, endpoint),
		r.Check("OTEL_EXPORTER_OTLP_ENDPOINT", "", want, endpoint))
	otelOff := r.Bool("OTEL_SDK_DISABLED", false) || r.String("OTEL_TRACES_EXPORTER", "otlp") == "none"
	xrayOff := r.Bool("AWS_XRAY_SDK_DISABLED", false)
	c := Config{
		Content:        r.Bool("SECUREAI_TRACE_CONTENT", false),
		Lambda:         r.String("AWS_LAMBDA_FUNCTION_NAME", "") != "",
		Region:         r.String("AWS_REGION", r.String("AWS_DEFAULT_REGION", "")),
		EnvSampler:     r.String("OTEL_TRACES_SAMPLER", "") != "",
		TrustedCallers: r.Prefixes("SECUREAI_TRACE_TRUSTED_CALLERS"),
	}
	if r.String("SECUREAI_TRACE_SAMPLE_RATIO", "") != "" {
		ratio := r.Fraction("SECUREAI_TRACE_SAMPLE_RATIO", 1)
		c.SampleRatio = &ratio
	}
	def := TracesOff
	if c.Lambda || configured != "" {
		def = TracesOTLP
	}
	switch r.Check("SECUREAI_TRACES", def, "otlp, xray or off", func(v string) bool {
		return v == TracesOTLP || v == TracesXRay || v == TracesOff
	}) {
	case TracesOTLP:
		c.OTLP = !otelOff
	case TracesXRay:
		c.XRay = !xrayOff
	}
	if !c.OTLP {
		return c
	}
	if configured == "" && c.Lambda {
		if c.Region == "" {
			r.Check("AWS_REGION", "", "the function's region, which names its X-Ray OTLP endpoint", func(v string) bool { return v != "" })
			return c
		}
		c.Endpoint = XRayEndpoint(c.Region)
		configured = c.Endpoint
	}
	c.SigV4 = r.Bool("SECUREAI_TRACES_SIGV4", isXRay(configured))
	return c
}

// isXRay reports whether an OTLP endpoint is one of X-Ray's, which take only signed exports.
func isXRay(v string) bool {
	u, err := url.Parse(v)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return strings.HasPrefix(h, "xray.") && (strings.HasSuffix(h, ".amazonaws.com") || strings.HasSuffix(h, ".amazonaws.com.cn"))
}

// endpoint accepts what the OTLP exporter can send to: an http(s) URL with a host, or nothing.
func endpoint(v string) bool {
	if v == "" {
		return true
	}
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.RawQuery == "" && u.Fragment == ""
}

// New builds the configured backend; nil when tracing is off.
func New(ctx context.Context, c Config) (Tracer, error) {
	switch {
	case c.OTLP:
		t, err := newOTel(ctx, c)
		if err != nil {
			return nil, err
		}
		return t, nil
	case c.XRay:
		return xrayTracer{}, nil
	}
	return nil, nil
}

// The attributes of an attempt's span: the GenAI conventions' names, and the gateway's own for
// what they have no name for. X-Ray subsegments carry the same names as metadata.
const (
	AttrOperation     = "gen_ai.operation.name"
	AttrProvider      = "gen_ai.provider.name"
	AttrRequestModel  = "gen_ai.request.model"
	AttrResponseModel = "gen_ai.response.model"
	AttrInputTokens   = "gen_ai.usage.input_tokens"
	AttrOutputTokens  = "gen_ai.usage.output_tokens"
	AttrErrorType     = "error.type"
	AttrInput         = "gen_ai.input.messages"  // only with Config.Content
	AttrOutput        = "gen_ai.output.messages" // only with Config.Content
	AttrReason        = "secureai.failover.reason"
	AttrStatus        = "secureai.attempt.status"
	AttrIndex         = "secureai.attempt.index"
	AttrRetry         = "secureai.attempt.retry"
	AttrServed        = "secureai.attempt.served"
	// AttrDeployment is the catalog provider of the deployment an attempt went to, for a model
	// served by several (gen_ai.provider.name names its wire format).
	AttrDeployment = "secureai.attempt.provider"
)

// operation is the GenAI operation every attempt performs.
const operation = "chat"

// providerName is the conventions' gen_ai.provider.name of a wire format.
func providerName(wire string) string {
	switch wire {
	case "gemini":
		return "gcp.gemini"
	case "bedrock":
		return "aws.bedrock"
	}
	return wire // openai, anthropic
}

// errorType is an ended attempt's error.type: its failover reason (low-cardinality, the
// gateway's own classification), or for a served stream that broke off, what broke it; "" when
// it served whole.
func errorType(e completion.AttemptEnd) string {
	if e.Line.Reason != "" {
		return string(e.Line.Reason)
	}
	switch {
	case e.Err == nil:
		return ""
	case errors.Is(e.Err, chain.ErrCanceled):
		return "canceled"
	}
	return completion.AsInterruption(e.Err).Code
}
