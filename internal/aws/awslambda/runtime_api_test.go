package awslambda_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// The runtime's wire format for an API Gateway streaming response, as
// aws-lambda-go v1.55 writes it (events/apigw.go): a JSON prelude, eight NUL
// bytes, then the body. Errors after the first byte travel as HTTP trailers
// (lambda/runtime_api_client.go).
const preludeDelimiter = "\x00\x00\x00\x00\x00\x00\x00\x00"

type prelude struct {
	StatusCode        int                 `json:"statusCode"`
	Headers           map[string]string   `json:"headers"`
	MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
}

// startStreamfn runs the test function under the real lambda.Start loop,
// talking to rt.
func startStreamfn(t *testing.T, rt *fakeRuntime) {
	bootstrap := testenv.GoBuild(t, "./testdata/streamfn")
	cmd := exec.Command(bootstrap)
	for _, kv := range os.Environ() {
		// Either would switch the function away from the streaming Runtime API path.
		if !strings.HasPrefix(kv, "AWS_SAM_LOCAL=") && !strings.HasPrefix(kv, "_LAMBDA_SERVER_PORT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(rt.URL, "http://"),
		"STREAMFN_RELEASE_URL="+rt.URL+"/release")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("function output:\n%s", out.String())
		}
	})
}

func event(t *testing.T, path, status string) []byte {
	ev := events.APIGatewayProxyRequest{
		HTTPMethod:     "POST",
		Path:           path,
		Body:           `{"stream":true}`,
		RequestContext: events.APIGatewayProxyRequestContext{DomainName: "api.example.com"},
	}
	if status != "" {
		ev.MultiValueQueryStringParameters = map[string][]string{"status": {status}}
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func splitPrelude(t *testing.T, got []byte) (prelude, string) {
	t.Helper()
	head, body, ok := strings.Cut(string(got), preludeDelimiter)
	if !ok {
		t.Fatalf("no prelude delimiter in %q", got)
	}
	var p prelude
	if err := json.Unmarshal([]byte(head), &p); err != nil {
		t.Fatalf("prelude %q: %v", head, err)
	}
	return p, body
}

func TestStreamingOverRuntimeAPI(t *testing.T) {
	rt := newFakeRuntime(t)
	startStreamfn(t, rt)

	for _, tt := range []struct {
		name, status string
		wantStatus   int
	}{
		{"default status", "", 200},
		{"error status set before the first chunk", "429", 429},
	} {
		t.Run(tt.name+" streams incrementally", func(t *testing.T) {
			inv := rt.invoke(event(t, "/v1/chat/completions", tt.status))
			var got []byte
			// The handler is now blocked on /release: the first chunk must
			// already be here.
			inv.readUntil(t, &got, "data: first\n\n")
			if strings.Contains(string(got), "second") {
				t.Fatal("second chunk arrived before release")
			}
			rt.release <- struct{}{}
			inv.readAll(t, &got)

			p, body := splitPrelude(t, got)
			if p.StatusCode != tt.wantStatus {
				t.Errorf("prelude statusCode = %d, want %d", p.StatusCode, tt.wantStatus)
			}
			if !reflect.DeepEqual(p.MultiValueHeaders["X-Multi"], []string{"a", "b"}) ||
				!reflect.DeepEqual(p.MultiValueHeaders["Content-Type"], []string{"text/event-stream"}) {
				t.Errorf("prelude headers = %v", p.MultiValueHeaders)
			}
			if body != "data: first\n\ndata: second\n\n" {
				t.Errorf("body = %q", body)
			}
			if ct := inv.header.Get("Content-Type"); ct != "application/vnd.awslambda.http-integration-response" {
				t.Errorf("response Content-Type = %q", ct)
			}
			if te := inv.header["Transfer-Encoding"]; !reflect.DeepEqual(te, []string{"chunked"}) {
				t.Errorf("Transfer-Encoding = %q, want chunked", te)
			}
			if et := inv.trailer.Get("Lambda-Runtime-Function-Error-Type"); et != "" {
				t.Errorf("clean stream carried error trailer %q", et)
			}
		})
	}

	// The gateway's surfaces end an interrupted stream this way: the error frame (no [DONE]) is
	// what tells the client, and the stream itself ends normally.
	t.Run("an interrupted stream ends cleanly after its error frame", func(t *testing.T) {
		inv := rt.invoke(event(t, "/interrupt", ""))
		var got []byte
		inv.readUntil(t, &got, "data: first\n\n")
		rt.release <- struct{}{}
		inv.readAll(t, &got)

		if _, body := splitPrelude(t, got); body != "data: first\n\ndata: {\"error\":{\"message\":\"upstream cut\"}}\n\n" {
			t.Errorf("body = %q, want the first chunk and the error frame", body)
		}
		if et := inv.trailer.Get("Lambda-Runtime-Function-Error-Type"); et != "" {
			t.Errorf("an interrupted stream carried the error trailer %q", et)
		}
	})

	t.Run("mid-stream abort is reported in the error trailers", func(t *testing.T) {
		inv := rt.invoke(event(t, "/abort", ""))
		var got []byte
		inv.readUntil(t, &got, "data: first\n\n")
		rt.release <- struct{}{}
		inv.readAll(t, &got)

		if _, body := splitPrelude(t, got); !strings.HasSuffix(body, "upstream cut\"}}\n\n") {
			t.Errorf("body = %q, want the error frame before the abort", body)
		}
		if et := inv.trailer.Get("Lambda-Runtime-Function-Error-Type"); et != "StreamError" {
			t.Errorf("error type trailer = %q, want StreamError", et)
		}
		raw, err := base64.StdEncoding.DecodeString(inv.trailer.Get("Lambda-Runtime-Function-Error-Body"))
		if err != nil {
			t.Fatal(err)
		}
		var lambdaErr struct{ ErrorMessage, ErrorType string }
		if err := json.Unmarshal(raw, &lambdaErr); err != nil || !strings.Contains(lambdaErr.ErrorMessage, "abort Handler") {
			t.Errorf("error body = %s (%v)", raw, err)
		}
	})

	t.Run("panic before the status is an invocation error", func(t *testing.T) {
		inv := rt.invoke(event(t, "/panic", ""))
		var got []byte
		inv.readAll(t, &got)
		if len(got) != 0 || !strings.Contains(string(inv.errBody), "boom before headers") {
			t.Errorf("streamed %q, error %s", got, inv.errBody)
		}
	})
}
