package httpapi_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
)

// A stream that secures its first token in time is untouched: nothing is written, and its status
// stays the surface's to choose — with keep-alives asked for or not.
func TestAwaitFirstTokenWritesNothingWhileInTime(t *testing.T) {
	for name, ctx := range map[string]context.Context{
		"no keep-alives":  context.Background(),
		"a quick answer":  httpapi.WithKeepAlive(context.Background(), time.Second),
		"keep-alives off": httpapi.WithKeepAlive(context.Background(), 0),
	} {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			ran := false
			out := httpapi.AwaitFirstToken(w, httptest.NewRequestWithContext(ctx, "POST", "/", nil), func() { ran = true })
			if !ran || out != nil || w.Body.Len() > 0 || w.Code != 200 || len(w.Header()) > 0 {
				t.Errorf("ran %v, stream %v, wrote %q (headers %v)", ran, out, w.Body.String(), w.Header())
			}
		})
	}
}

// A stream still waiting after the interval is committed (200, text/event-stream) and sent an SSE
// comment, then one after each further interval, until its first token is secured; nothing is
// written after AwaitFirstToken returns.
func TestAwaitFirstTokenKeepsAWaitingStreamAlive(t *testing.T) {
	const every = 40 * time.Millisecond
	w := httptest.NewRecorder()
	r := httptest.NewRequestWithContext(httpapi.WithKeepAlive(context.Background(), every), "POST", "/", nil)
	out := httpapi.AwaitFirstToken(w, r, func() { time.Sleep(3*every + every/2) })
	if out == nil {
		t.Fatal("the stream was not committed")
	}
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/event-stream" || !w.Flushed {
		t.Errorf("status %d, headers %v, flushed %v", w.Code, w.Header(), w.Flushed)
	}
	got := w.Body.String()
	// 3 on time; a busy machine may fire the last timer after the wait has ended.
	if n := strings.Count(got, ": waiting for the first token\n\n"); n < 2 || n > 3 || strings.ReplaceAll(got, ": waiting for the first token\n\n", "") != "" {
		t.Errorf("body %q: want 3 comments and nothing else", got)
	}
	time.Sleep(2 * every)
	if w.Body.String() != got {
		t.Errorf("written after AwaitFirstToken returned: %q", w.Body.String())
	}
	_ = out.Data([]byte(`{"first":"token"}`))
	if !strings.HasSuffix(w.Body.String(), "data: {\"first\":\"token\"}\n\n") {
		t.Errorf("the stream did not go on after the comments: %q", w.Body.String())
	}
}
