package providertest

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// ServeJSON answers status with body as JSON; header is name, value pairs set first.
func ServeJSON(status int, body []byte, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

// ServeFixture answers status with testdata/name as JSON.
func ServeFixture(t testing.TB, status int, name string, header ...string) http.HandlerFunc {
	return ServeJSON(status, Fixture(t, name), header...)
}

// ServeStream writes frames one by one with contentType, flushing each, pausing delay before
// the second (a slow first token), then runs end (nil: a clean end of the response).
func ServeStream(contentType string, frames [][]byte, delay time.Duration, end http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for i, f := range frames {
			if i == 1 && delay > 0 {
				time.Sleep(delay)
			}
			_, _ = w.Write(f)
			w.(http.Flusher).Flush()
		}
		if end != nil {
			end(w, r)
		}
	}
}

// ServeSSE is ServeStream for Server-Sent Events, each with its blank-line terminator.
func ServeSSE(events []string, delay time.Duration, end http.HandlerFunc) http.HandlerFunc {
	frames := make([][]byte, len(events))
	for i, e := range events {
		frames[i] = []byte(e)
	}
	return ServeStream("text/event-stream", frames, delay, end)
}

// Cut drops the connection in the middle of a response.
func Cut(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }

// Hang keeps the connection open and silent until the client leaves.
func Hang(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// ResetBeforeHeaders closes the connection before any answer.
func ResetBeforeHeaders(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// CutBody announces a longer body than it sends, then drops the connection.
func CutBody(body []byte, announced string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", announced)
		_, _ = w.Write(body)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
}

// WriteString answers 200 with s as is, however malformed.
func WriteString(s string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, s) }
}
