// Package tracing is the one seam between the gateway and AWS X-Ray. The X-Ray SDK is in
// maintenance mode (AWS points to OpenTelemetry next), so nothing else imports it: replacing it
// means replacing this package.
package tracing

import (
	"context"
	"net/http"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-xray-sdk-go/v2/instrumentation/awsv2"
	"github.com/aws/aws-xray-sdk-go/v2/xray"
	"github.com/secureai-gateway/gateway/internal/chain"
)

// Enabled reports whether traces are recorded, from the environment getenv reads: in Lambda with
// active tracing, unless AWS_XRAY_SDK_DISABLED says otherwise (it does locally and in tests).
func Enabled(getenv func(string) string) bool {
	if off, err := strconv.ParseBool(getenv("AWS_XRAY_SDK_DISABLED")); err == nil && off {
		return false
	}
	return getenv("_X_AMZN_TRACE_ID") != "" || getenv("AWS_LAMBDA_FUNCTION_NAME") != ""
}

// Attempt is a chain.Engine Trace hook: one subsegment per attempt, annotated with the model,
// its status and its failover reason, which is what an operator looks for in a trace.
func Attempt(ctx context.Context, model string) (context.Context, func(chain.Attempt)) {
	sctx, seg := xray.BeginSubsegment(ctx, "attempt "+model)
	if seg == nil {
		return ctx, func(chain.Attempt) {}
	}
	return sctx, func(a chain.Attempt) {
		_ = seg.AddAnnotation("model", a.Model)
		_ = seg.AddAnnotation("status", string(a.Status))
		if a.Reason != "" {
			_ = seg.AddAnnotation("reason", string(a.Reason))
		}
		seg.Close(nil)
	}
}

// HTTPClient traces the provider calls made with c.
func HTTPClient(c *http.Client) *http.Client { return xray.Client(c) }

// AWS traces every call of the SDK clients built from cfg.
func AWS(cfg *aws.Config) { awsv2.AWSV2Instrumentor(&cfg.APIOptions) }
