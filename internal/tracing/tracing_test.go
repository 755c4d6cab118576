package tracing

import (
	"context"
	"testing"

	"github.com/aws/aws-xray-sdk-go/v2/xray"
	"github.com/secureai-gateway/gateway/internal/chain"
)

func TestDisabledLocallyAndInTests(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"disabled in Lambda", map[string]string{"AWS_XRAY_SDK_DISABLED": "true", "AWS_LAMBDA_FUNCTION_NAME": "openai-chat"}, false},
		{"outside Lambda", map[string]string{}, false},
		{"in Lambda", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "openai-chat"}, true},
		{"under a trace header", map[string]string{"_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Enabled(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("Enabled() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAttemptWithoutASegmentIsHarmless(t *testing.T) {
	t.Setenv("AWS_XRAY_CONTEXT_MISSING", "IGNORE_ERROR")
	ctx := context.Background()
	got, end := Attempt(ctx, "demo/ok")
	if got == nil {
		t.Fatal("Attempt returned a nil context")
	}
	end(chain.Attempt{Model: "demo/ok", Status: chain.Failed, Reason: chain.Timeout})
}

func TestAttemptIsOneAnnotatedSubsegment(t *testing.T) {
	t.Setenv("AWS_XRAY_SDK_DISABLED", "false") // make test disables it for every other package
	ctx, root := xray.BeginSegment(context.Background(), "request")
	defer root.Close(nil)
	sctx, end := Attempt(ctx, "demo/error-500")
	sub := xray.GetSegment(sctx)
	if sub == nil || sub == root || sub.Name != "attempt demo/error-500" {
		t.Fatalf("attempt context carries %+v, want a subsegment named for the model", sub)
	}
	end(chain.Attempt{Model: "demo/error-500", Status: chain.Failed, Reason: chain.ServerError})
	sub.Lock()
	defer sub.Unlock()
	for k, want := range map[string]string{"model": "demo/error-500", "status": "failed", "reason": "server_error"} {
		if got := sub.Annotations[k]; got != want {
			t.Errorf("annotation %s = %v, want %s", k, got, want)
		}
	}
	if sub.InProgress {
		t.Error("the subsegment is still open after the attempt ended")
	}
}
