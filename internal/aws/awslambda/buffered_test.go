package awslambda

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"testing"
)

func sseHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Add("X-Multi", "a")
	w.Header().Add("X-Multi", "b")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, "data: one\n\n")
	w.(http.Flusher).Flush()
	io.WriteString(w, "data: [DONE]\n\n")
}

func TestBuffered(t *testing.T) {
	resp, err := Buffered(http.HandlerFunc(sseHandler))(context.Background(), proxyEvent("POST", "/v1/chat/completions", "{}"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 201 || resp.Body != "data: one\n\ndata: [DONE]\n\n" {
		t.Errorf("got %d %q", resp.StatusCode, resp.Body)
	}
	if got := resp.MultiValueHeaders["X-Multi"]; !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("X-Multi = %q", got)
	}
}

func TestStreamingBufferedGivesTheStreamAllAtOnce(t *testing.T) {
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		wantStatus int
		wantBody   string
		wantBase64 bool
	}{
		{"sse stream", sseHandler, 201, "data: one\n\ndata: [DONE]\n\n", false},
		{"binary body is base64", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte{0xff, 0xfe})
		}, 200, "//4=", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := StreamingBuffered(tt.handler)(context.Background(), proxyEvent("GET", "/", ""))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus || resp.Body != tt.wantBody || resp.IsBase64Encoded != tt.wantBase64 {
				t.Errorf("got %d %q base64=%v", resp.StatusCode, resp.Body, resp.IsBase64Encoded)
			}
		})
	}
}

func TestStreamingBufferedReportsMidStreamAbort(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: partial\n\n")
		panic(http.ErrAbortHandler)
	})
	if _, err := StreamingBuffered(h)(context.Background(), proxyEvent("GET", "/", "")); err == nil {
		t.Fatal("aborted stream returned as a complete response")
	}
}

func TestSAMLocal(t *testing.T) {
	for env, want := range map[string]bool{"true": true, "": false, "false": false} {
		t.Setenv("AWS_SAM_LOCAL", env)
		if got := SAMLocal(); got != want {
			t.Errorf("AWS_SAM_LOCAL=%q: SAMLocal() = %v", env, got)
		}
	}
}
