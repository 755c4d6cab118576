package tracing

import (
	"context"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-xray-sdk-go/v2/instrumentation/awsv2"
	"github.com/aws/aws-xray-sdk-go/v2/xray"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
)

// xrayTracer records attempts as X-Ray subsegments of the function's segment, which Lambda opens
// for the invocation (it is the request's span: the caller's traceparent is not X-Ray's header).
type xrayTracer struct{}

// Handler implements Tracer: the Lambda segment is the request's.
func (xrayTracer) Handler(_ string, h http.Handler) http.Handler { return h }

// Client implements Tracer: a subsegment per provider call, and X-Ray's trace header on it.
func (xrayTracer) Client(c *http.Client) *http.Client { return xray.Client(c) }

// Shutdown implements Tracer: the X-Ray daemon sends segments as they close.
func (xrayTracer) Shutdown(context.Context) error { return nil }

// Attempt implements completion.Tracer: one subsegment per attempt. Its annotations (model,
// status, reason: indexed, for filter expressions) are what an operator searches by; its metadata
// carries the same attributes, under the same names, as the OpenTelemetry span.
func (xrayTracer) Attempt(ctx context.Context, a completion.AttemptStart) (context.Context, completion.AttemptSpan) {
	sctx, seg := xray.BeginSubsegment(ctx, operation+" "+a.Model)
	if seg == nil {
		return ctx, xrayAttempt{}
	}
	return sctx, xrayAttempt{seg: seg, start: a}
}

type xrayAttempt struct {
	seg   *xray.Segment
	start completion.AttemptStart
}

func (s xrayAttempt) End(e completion.AttemptEnd) {
	seg := s.seg
	if seg == nil {
		return
	}
	_ = seg.AddAnnotation("model", e.Line.Model)
	_ = seg.AddAnnotation("status", string(e.Line.Status))
	if s.start.Provider != "" {
		_ = seg.AddAnnotation("provider", s.start.Provider)
		_ = seg.AddMetadata(AttrDeployment, s.start.Provider)
	}
	if e.Line.Reason != "" {
		_ = seg.AddAnnotation("reason", string(e.Line.Reason))
	}
	meta := func(k string, v any) { _ = seg.AddMetadata(k, v) }
	meta(AttrOperation, operation)
	meta(AttrProvider, providerName(s.start.Wire))
	meta(AttrRequestModel, s.start.Model)
	meta(AttrIndex, s.start.Index)
	meta(AttrStatus, string(e.Line.Status))
	meta(AttrRetry, e.Line.Retry)
	meta(AttrServed, e.Line.Status == chain.Served)
	if e.Line.Reason != "" {
		meta(AttrReason, string(e.Line.Reason))
	}
	if e.ResponseModel != "" {
		meta(AttrResponseModel, e.ResponseModel)
	}
	if u := e.Usage; u != nil {
		meta(AttrInputTokens, u.PromptTokens)
		meta(AttrOutputTokens, u.CompletionTokens)
	}
	if et := errorType(e); et != "" {
		meta(AttrErrorType, et)
	}
	seg.Close(nil)
}

// AWS traces every call of the SDK clients built from cfg (X-Ray only).
func AWS(cfg *aws.Config) { awsv2.AWSV2Instrumentor(&cfg.APIOptions) }
