package tracing

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-xray-sdk-go/v2/xray"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/envvar"
	"github.com/secureai-gateway/gateway/internal/provider"
)

// Locally tracing is off until an OTLP endpoint is set; in Lambda it is OTLP to the region's
// X-Ray endpoint, signed, unless an endpoint (a collector) or SECUREAI_TRACES says otherwise.
func TestConfigOffLocallyOTLPToXRayInLambda(t *testing.T) {
	lambda := func(kv ...string) map[string]string {
		m := map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "openai-chat", "AWS_REGION": "eu-west-1"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name       string
		env        map[string]string
		otlp, xray bool
		endpoint   string
		sigV4      bool
	}{
		{"nothing set", map[string]string{}, false, false, "", false},
		{"an OTLP endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, false, "", false},
		{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, false, "", false},
		{"the SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false, false, "", false},
		{"no traces exporter", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, false, false, "", false},
		{"turned off locally", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "SECUREAI_TRACES": "off"}, false, false, "", false},
		{"in Lambda", lambda(), true, false, "https://xray.eu-west-1.amazonaws.com/v1/traces", true},
		{"in Lambda with the ADOT collector", lambda("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318"), true, false, "", false},
		{"in Lambda to X-Ray named", lambda("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://xray.us-east-1.amazonaws.com/v1/traces"), true, false, "", true},
		{"in Lambda signing for a test receiver", lambda("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces", "SECUREAI_TRACES_SIGV4", "true"), true, false, "", true},
		{"in Lambda unsigned to X-Ray", lambda("SECUREAI_TRACES_SIGV4", "false"), true, false, "https://xray.eu-west-1.amazonaws.com/v1/traces", false},
		{"in Lambda with the X-Ray SDK", lambda("SECUREAI_TRACES", "xray"), false, true, "", false},
		{"in Lambda with the X-Ray SDK disabled", lambda("SECUREAI_TRACES", "xray", "AWS_XRAY_SDK_DISABLED", "true"), false, false, "", false},
		{"in Lambda turned off", lambda("SECUREAI_TRACES", "off"), false, false, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := envvar.New(func(k string) string { return tc.env[k] })
			c := ParseConfig(r)
			if r.Err() != nil || c.OTLP != tc.otlp || c.XRay != tc.xray || c.Endpoint != tc.endpoint || c.SigV4 != tc.sigV4 || c.Content {
				t.Errorf("ParseConfig = %+v (%v), want OTLP %v to %q signed %v, X-Ray %v, no content", c, r.Err(), tc.otlp, tc.endpoint, tc.sigV4, tc.xray)
			}
			tr, err := New(context.Background(), Config{})
			if tr != nil || err != nil {
				t.Errorf("New(off) = %v, %v; want nil, nil", tr, err)
			}
		})
	}
	r := envvar.New(func(k string) string { return map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "openai-chat"}[k] })
	ParseConfig(r)
	var e *envvar.Error
	if !errors.As(r.Err(), &e) || e.Name != "AWS_REGION" {
		t.Errorf("in Lambda without a region: error %v, want one naming AWS_REGION", r.Err())
	}
	for _, bad := range []struct{ name, value string }{
		{"SECUREAI_TRACE_CONTENT", "maybe"}, {"AWS_XRAY_SDK_DISABLED", "maybe"}, {"OTEL_SDK_DISABLED", "maybe"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"}, {"OTEL_EXPORTER_OTLP_ENDPOINT", "grpc://collector:4317"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://"}, {"SECUREAI_TRACES", "x-ray"},
		{"SECUREAI_TRACE_SAMPLE_RATIO", "2"}, {"SECUREAI_TRACE_TRUSTED_CALLERS", "collector.internal"},
	} {
		r := envvar.New(func(k string) string {
			if k == bad.name {
				return bad.value
			}
			return ""
		})
		ParseConfig(r)
		var e *envvar.Error
		if !errors.As(r.Err(), &e) || e.Name != bad.name {
			t.Errorf("%s=%s: error %v, want one naming it", bad.name, bad.value, r.Err())
		}
	}
}

func TestXRayAttemptWithoutASegmentIsHarmless(t *testing.T) {
	t.Setenv("AWS_XRAY_CONTEXT_MISSING", "IGNORE_ERROR")
	ctx := context.Background()
	got, span := xrayTracer{}.Attempt(ctx, completion.AttemptStart{Model: "demo/ok", Wire: "openai"})
	if got == nil {
		t.Fatal("Attempt returned a nil context")
	}
	span.End(completion.AttemptEnd{Line: chain.Attempt{Model: "demo/ok", Status: chain.Failed, Reason: chain.Timeout}})
}

// An X-Ray subsegment per attempt keeps the annotations operators filter by (model, status,
// reason) and carries the OpenTelemetry span's attributes, by the same names, as metadata.
func TestXRayAttemptIsOneAnnotatedSubsegment(t *testing.T) {
	t.Setenv("AWS_XRAY_SDK_DISABLED", "false") // make test disables it for every other package
	ctx, root := xray.BeginSegment(context.Background(), "request")
	defer root.Close(nil)
	for _, tc := range []struct {
		end      completion.AttemptEnd
		annotate map[string]any
		meta     map[string]any
	}{
		{completion.AttemptEnd{Line: chain.Attempt{Model: "demo/error-500", Status: chain.Failed, Reason: chain.ServerError}},
			map[string]any{"model": "demo/error-500", "status": "failed", "reason": "server_error"},
			map[string]any{AttrOperation: "chat", AttrProvider: "aws.bedrock", AttrRequestModel: "demo/error-500", AttrIndex: 0,
				AttrRetry: 0, AttrServed: false, AttrReason: "server_error", AttrErrorType: "server_error"}},
		{completion.AttemptEnd{Line: chain.Attempt{Model: "demo/ok", Status: chain.Served, Retry: 1}, ResponseModel: "ok-1",
			Usage: &provider.Usage{PromptTokens: 7, CompletionTokens: 3}},
			map[string]any{"model": "demo/ok", "status": "served"},
			map[string]any{AttrProvider: "aws.bedrock", AttrRequestModel: "demo/ok", AttrIndex: 1, AttrRetry: 1, AttrServed: true,
				AttrResponseModel: "ok-1", AttrInputTokens: 7, AttrOutputTokens: 3}},
	} {
		model := tc.end.Line.Model
		index := 0
		if tc.end.Line.Status == chain.Served {
			index = 1
		}
		sctx, span := xrayTracer{}.Attempt(ctx, completion.AttemptStart{Model: model, Wire: "bedrock", Index: index})
		sub := xray.GetSegment(sctx)
		if sub == nil || sub == root || sub.Name != "chat "+model {
			t.Fatalf("attempt context carries %+v, want a subsegment named chat %s", sub, model)
		}
		span.End(tc.end)
		sub.Lock()
		for k, want := range tc.annotate {
			if got := sub.Annotations[k]; got != want {
				t.Errorf("%s: annotation %s = %v, want %v", model, k, got, want)
			}
		}
		if _, ok := sub.Annotations["reason"]; ok && tc.annotate["reason"] == nil {
			t.Errorf("%s: a reason annotation on a served attempt", model)
		}
		meta := sub.Metadata["default"]
		for k, want := range tc.meta {
			if got := meta[k]; got != want {
				t.Errorf("%s: metadata %s = %v, want %v", model, k, got, want)
			}
		}
		if _, ok := meta[AttrErrorType]; ok && tc.meta[AttrErrorType] == nil {
			t.Errorf("%s: error.type on an attempt that served", model)
		}
		if sub.InProgress {
			t.Errorf("%s: the subsegment is still open after the attempt ended", model)
		}
		sub.Unlock()
	}
}
