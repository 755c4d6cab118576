package functest

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
	"github.com/secureai-gateway/gateway/internal/tracing/otlptest"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
)

// The built openai-chat exports a failover request's spans before its invocation ends — a frozen
// instance would export nothing — with the caller's traceparent as the request span's parent and
// one child span per attempt carrying the GenAI attributes. Deployed as by default (OTLP to the
// region's X-Ray endpoint, here pointed at a receiver) every export is SigV4-signed for X-Ray
// under the function's credentials; deployed with a collector endpoint (the template's
// OtlpEndpoint, the ADOT layer) it is not, since the collector signs.
func TestTheChatFunctionExportsItsSpansBeforeTheInvocationEnds(t *testing.T) {
	root := testenv.RepoRoot(t)
	built := make(chan map[string]string, 1)
	go func() { built <- buildAll(t, root, []string{"openai-chat"}) }()
	fx := awsFixture(t)
	bins := <-built
	if bins == nil {
		t.FailNow()
	}
	raw, err := os.ReadFile(filepath.Join(root, "events", "openai-chat-failover.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		env    func(receiver string) []string
		signed bool
	}{
		{"to X-Ray's OTLP endpoint, signed", func(receiver string) []string {
			return []string{"SECUREAI_TRACES=otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + receiver + "/v1/traces", "SECUREAI_TRACES_SIGV4=true"}
		}, true},
		{"to a collector", func(receiver string) []string {
			return []string{"SECUREAI_TRACES=", "OTEL_EXPORTER_OTLP_ENDPOINT=" + receiver}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			receiver := otlptest.New(t)
			// The sample event's caller (203.0.113.10) is trusted, so its traceparent is the
			// request's parent (an untrusted caller's is only linked: issue 34 item 8).
			env := append(slices.Clone(fx.env), "AWS_LAMBDA_FUNCTION_NAME=openai-chat", "SECUREAI_TRACE_TRUSTED_CALLERS=203.0.113.10/32")
			lambda := testenv.StartLambda(t, bins["openai-chat"], append(env, tc.env(receiver.URL)...)...)
			exportsSpans(t, lambda, raw, receiver)
			for _, r := range receiver.Requests() {
				auth := r.Header.Get("Authorization")
				wantPrefix := "AWS4-HMAC-SHA256 Credential=" + motoCreds.AccessKeyID + "/"
				if tc.signed && (!strings.HasPrefix(auth, wantPrefix) || !strings.Contains(auth, "/"+motoRegion+"/xray/aws4_request,") ||
					r.Header.Get("X-Amz-Date") == "") {
					t.Errorf("export signed %q (X-Amz-Date %q), want SigV4 for xray in %s", auth, r.Header.Get("X-Amz-Date"), motoRegion)
				}
				if !tc.signed && auth != "" {
					t.Errorf("export to a collector carries Authorization %q", auth)
				}
			}
		})
	}
}

// exportsSpans invokes lambda with the failover event under a caller's traceparent and checks,
// as soon as the invocation has ended, the spans receiver holds.
func exportsSpans(t *testing.T, lambda *testenv.Lambda, raw []byte, receiver *otlptest.Receiver) {
	t.Helper()
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	const callerTrace, callerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	traceparent := "00-" + callerTrace + "-" + callerSpan + "-01"
	ev.Headers["traceparent"] = traceparent
	if ev.MultiValueHeaders != nil {
		ev.MultiValueHeaders["traceparent"] = []string{traceparent}
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if resp := decodeStreamed(t, lambda.Invoke(t, payload)); resp.status != http.StatusOK {
		t.Fatalf("status %d: %s\n%s", resp.status, resp.body, lambda.Output())
	}

	// Read at once: the spans must already be there.
	requests := receiver.Named("POST /v1/chat/completions")
	if len(requests) != 1 {
		t.Fatalf("%d request spans received when the invocation ended, want 1 (received: %d spans in %d exports)\n%s",
			len(requests), len(receiver.Spans()), len(receiver.Requests()), lambda.Output())
	}
	root0 := requests[0]
	if hex.EncodeToString(root0.TraceId) != callerTrace || hex.EncodeToString(root0.ParentSpanId) != callerSpan {
		t.Errorf("request span in trace %x under %x, want the caller's %s under %s", root0.TraceId, root0.ParentSpanId, callerTrace, callerSpan)
	}
	for i, model := range []string{"demo/error-500", "demo/ok"} {
		spans := receiver.Named("chat " + model)
		if len(spans) != 1 {
			t.Errorf("%d spans of the %s attempt, want 1", len(spans), model)
			continue
		}
		s, a := spans[0], otlptest.Attrs(spans[0])
		if string(s.ParentSpanId) != string(root0.SpanId) || s.Kind != tracev1.Span_SPAN_KIND_CLIENT {
			t.Errorf("%s: parent %x kind %v, want the request span %x and a client span", model, s.ParentSpanId, s.Kind, root0.SpanId)
		}
		if a["gen_ai.operation.name"].GetStringValue() != "chat" || a["gen_ai.request.model"].GetStringValue() != model ||
			a["secureai.attempt.index"].GetIntValue() != int64(i) || a["secureai.attempt.served"].GetBoolValue() != (i == 1) {
			t.Errorf("%s: attributes %v", model, a)
		}
	}
}
