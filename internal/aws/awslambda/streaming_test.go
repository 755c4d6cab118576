package awslambda

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

func proxyEvent(method, path, body string) events.APIGatewayProxyRequest {
	return events.APIGatewayProxyRequest{
		HTTPMethod: method,
		Path:       path,
		Body:       body,
		MultiValueHeaders: map[string][]string{
			"Content-Type": {"application/json"},
			"X-Multi":      {"a", "b"},
		},
		MultiValueQueryStringParameters: map[string][]string{"q": {"1", "2"}},
		RequestContext:                  events.APIGatewayProxyRequestContext{DomainName: "api.example.com", Stage: "prod"},
	}
}

// readChunk reads until want has arrived, failing after a timeout so a stream
// that never comes fails the test instead of hanging it.
func readChunk(t *testing.T, r io.Reader, want string) {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, len(want))
		n, _ := io.ReadFull(r, buf)
		got <- string(buf[:n])
	}()
	select {
	case s := <-got:
		if s != want {
			t.Fatalf("chunk = %q, want %q", s, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for chunk %q", want)
	}
}

func TestStreamingReturnsAtCommitAndStreamsLaterWrites(t *testing.T) {
	release := make(chan struct{})
	done := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-release
		w.Header().Set("X-Too-Late", "ignored")
		io.WriteString(w, "data: two\n\n")
	})

	resp, err := Streaming(h)(context.Background(), proxyEvent("POST", "/v1/chat/completions", "{}"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("StatusCode = %d, want 202", resp.StatusCode)
	}
	if got := resp.MultiValueHeaders["Set-Cookie"]; !reflect.DeepEqual(got, []string{"a=1", "b=2"}) {
		t.Errorf("Set-Cookie = %q, want both values", got)
	}
	readChunk(t, resp.Body, "data: one\n\n")
	select {
	case <-done:
		t.Fatal("handler finished before its first chunk was read: not streaming")
	default:
	}
	close(release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "data: two\n\n" {
		t.Fatalf("rest = %q, %v", rest, err)
	}
	if _, ok := resp.MultiValueHeaders["X-Too-Late"]; ok {
		t.Error("header set after commit reached the response")
	}
}

func TestStreamingStatusAndHeaders(t *testing.T) {
	tests := []struct {
		name        string
		handler     http.HandlerFunc
		wantStatus  int
		wantBody    string
		wantCType   string
		wantHeaders map[string][]string
	}{
		{
			name:       "write without WriteHeader answers 200 with a sniffed content type",
			handler:    func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>") },
			wantStatus: 200, wantBody: "<html>", wantCType: "text/html; charset=utf-8",
		},
		{
			name: "error status with a JSON body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "3")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"error":{}}`)
			},
			wantStatus: 429, wantBody: `{"error":{}}`, wantCType: "application/json",
			wantHeaders: map[string][]string{"Retry-After": {"3"}},
		},
		{
			name:       "handler that writes nothing answers 200",
			handler:    func(w http.ResponseWriter, r *http.Request) {},
			wantStatus: 200,
		},
		{
			name:       "empty write commits without blocking",
			handler:    func(w http.ResponseWriter, r *http.Request) { w.Write(nil) },
			wantStatus: 200,
		},
		{
			name: "status without body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNoContent)
			},
			wantStatus: 204,
		},
		{
			name: "informational status is not committed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusEarlyHints)
				w.WriteHeader(http.StatusCreated)
			},
			wantStatus: 201,
		},
		{
			name: "second WriteHeader is ignored",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadGateway)
				w.WriteHeader(http.StatusOK)
			},
			wantStatus: 502,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := Streaming(tt.handler)(context.Background(), proxyEvent("GET", "/", ""))
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus || string(body) != tt.wantBody {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
			if got := http.Header(resp.MultiValueHeaders).Get("Content-Type"); got != tt.wantCType {
				t.Errorf("Content-Type = %q, want %q", got, tt.wantCType)
			}
			for k, v := range tt.wantHeaders {
				if got := resp.MultiValueHeaders[k]; !reflect.DeepEqual(got, v) {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestStreamingBuildsRequestFromEvent(t *testing.T) {
	var got *http.Request
	var body string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, body = r, string(b)
	})
	ev := proxyEvent("POST", "/v1/chat/completions", "aGVsbG8=")
	ev.IsBase64Encoded = true
	resp, err := Streaming(h)(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	if got.Method != "POST" || got.URL.Path != "/v1/chat/completions" || got.Host != "api.example.com" {
		t.Errorf("request = %s %s host %s", got.Method, got.URL.Path, got.Host)
	}
	if q := got.URL.Query()["q"]; !reflect.DeepEqual(q, []string{"1", "2"}) {
		t.Errorf("query q = %q", q)
	}
	if v := got.Header.Values("X-Multi"); !reflect.DeepEqual(v, []string{"a", "b"}) {
		t.Errorf("X-Multi = %q", v)
	}
	if body != "hello" {
		t.Errorf("body = %q, want base64-decoded hello", body)
	}
}

func TestStreamingPanicBeforeCommitIsAnInvocationError(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic("boom") })
	resp, err := Streaming(h)(context.Background(), proxyEvent("GET", "/", ""))
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("got %v, %v; want the panic as error", resp, err)
	}
}

func TestStreamingAbortAfterCommitFailsTheBody(t *testing.T) {
	for _, tt := range []struct {
		name  string
		panic any
		want  error
	}{
		{"deliberate abort", http.ErrAbortHandler, http.ErrAbortHandler},
		{"unexpected panic", errors.ErrUnsupported, errors.ErrUnsupported},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "data: {\"error\":{}}\n\n")
				panic(tt.panic)
			})
			resp, err := Streaming(h)(context.Background(), proxyEvent("GET", "/", ""))
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			var se *StreamError
			if !errors.As(err, &se) || !errors.Is(err, tt.want) {
				t.Fatalf("read error = %v, want a StreamError wrapping %v", err, tt.want)
			}
			if string(body) != "data: {\"error\":{}}\n\n" {
				t.Errorf("body before the error = %q", body)
			}
		})
	}
}

func TestStreamingInvocationCancelReachesHandler(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	handlerSaw := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		handlerSaw <- r.Context().Err()
	})
	resp, err := Streaming(h)(ctx, proxyEvent("GET", "/", ""))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-handlerSaw:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler ctx err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler context not canceled")
	}
	resp.Close()
}

func TestStreamingDeadlineIsInvocationDeadline(t *testing.T) {
	deadline := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var got time.Time
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got, _ = r.Context().Deadline() })
	resp, err := Streaming(h)(ctx, proxyEvent("GET", "/", ""))
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	if !got.Equal(deadline) {
		t.Errorf("handler deadline = %v, want %v", got, deadline)
	}
}

func TestStreamingReaderGoneStopsHandler(t *testing.T) {
	writeErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		for {
			if _, err := io.WriteString(w, "x"); err != nil {
				<-r.Context().Done() // the failed write must cancel the request
				writeErr <- err
				return
			}
		}
	})
	resp, err := Streaming(h)(context.Background(), proxyEvent("GET", "/", ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Close() // what aws-lambda-go does once the runtime POST ends
	select {
	case err := <-writeErr:
		if !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("write err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler kept writing after the reader closed")
	}
}
