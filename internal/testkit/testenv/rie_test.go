package testenv_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// The awslambda test function, in its sam local (buffered) mode, stands in for
// any function binary: the emulator returns its output as one JSON document.
func TestRIERunsAFunctionBinary(t *testing.T) {
	bootstrap := testenv.GoBuild(t, "../../aws/awslambda/testdata/streamfn")
	fn := testenv.StartLambda(t, bootstrap, "AWS_SAM_LOCAL=true", "STREAMFN_RELEASE_URL=")

	ev, err := json.Marshal(events.APIGatewayProxyRequest{
		HTTPMethod:                      "POST",
		Path:                            "/v1/chat/completions",
		MultiValueQueryStringParameters: map[string][]string{"status": {"201"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the second invoke reuses the warm process
		var resp events.APIGatewayProxyResponse
		out := fn.Invoke(t, ev)
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("invoke %d: output %q: %v", i, out, err)
		}
		if resp.StatusCode != 201 || resp.Body != "data: first\n\ndata: second\n\n" {
			t.Errorf("invoke %d: got %d %q", i, resp.StatusCode, resp.Body)
		}
	}
}

// Without AWS_SAM_LOCAL the function streams; the emulator buffers the stream
// and returns the raw HTTP-integration output: prelude, eight NULs, body.
func TestRIEBuffersAStreamingFunction(t *testing.T) {
	bootstrap := testenv.GoBuild(t, "../../aws/awslambda/testdata/streamfn")
	fn := testenv.StartLambda(t, bootstrap, "AWS_SAM_LOCAL=", "STREAMFN_RELEASE_URL=")
	out := fn.Invoke(t, []byte(`{"httpMethod":"GET","path":"/"}`))
	head, body, ok := strings.Cut(string(out), "\x00\x00\x00\x00\x00\x00\x00\x00")
	if !ok || !strings.Contains(head, `"statusCode":200`) || body != "data: first\n\ndata: second\n\n" {
		t.Fatalf("output = %q", out)
	}
}
