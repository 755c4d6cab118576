package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/secureai-gateway/gateway/internal/chain"
)

// WriteJSON writes v as a JSON response.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// StartAnswer commits a 200 JSON answer of n bytes. With its length known it goes out whole,
// unchunked, and SendAnswer sends it before the request's bookkeeping (the access line, the
// middleware unwinding) runs: net/http would otherwise hold it until the handler returns.
func StartAnswer(w http.ResponseWriter, n int) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(http.StatusOK)
}

// SendAnswer sends what StartAnswer began, once it is written whole — unless a writer on the
// way holds it (an idempotent request's answer leaves only once it is recorded, so a retry that
// follows it finds the record).
func SendAnswer(w http.ResponseWriter) {
	switch w := w.(type) {
	case answerSender:
		w.sendAnswer()
	case http.Flusher:
		w.Flush()
	}
}

// answerSender is a writer of this package that decides how a whole answer leaves.
type answerSender interface{ sendAnswer() }

// SSE writes Server-Sent Events frames, flushing each so it leaves at once.
type SSE struct {
	w        http.ResponseWriter
	f        http.Flusher
	more     func() bool
	batching bool // inside Batch: frames are held until its end
}

// Coalesce holds a frame's flush while more reports that the next frame is already at hand: a
// burst of chunks leaves in one write, and nothing ever waits for a chunk still to come.
func (s *SSE) Coalesce(more func() bool) { s.more = more }

// StartSSE commits the 200 status and event-stream headers.
func StartSSE(w http.ResponseWriter) *SSE {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &SSE{w: w, f: f}
}

var (
	dataPrefix  = []byte("data: ")
	frameEnd    = []byte("\n\n")
	doneFrame   = []byte("data: [DONE]\n\n")
	eventPrefix = []byte("event: ")
	eventEnd    = []byte("\n")
)

// Begin starts a data frame; write its payload to Writer, then call End.
func (s *SSE) Begin() error { _, err := s.w.Write(dataPrefix); return err }

// Writer is where a frame's payload goes.
func (s *SSE) Writer() http.ResponseWriter { return s.w }

// End closes the frame and flushes it, unless Coalesce says another frame follows at once or a
// Batch is being written.
func (s *SSE) End() error {
	_, err := s.w.Write(frameEnd)
	if !s.batching && (s.more == nil || !s.more()) {
		s.flush()
	}
	return err
}

// Batch writes the frames write writes as one burst: none is flushed on its own, and they leave
// together, unless Coalesce says another frame follows at once. One upstream chunk becomes
// several events on the Messages and Responses wires; flushing each would be a write each.
func (s *SSE) Batch(write func() error) error {
	s.batching = true
	err := write()
	s.batching = false
	if err == nil && (s.more == nil || !s.more()) {
		s.flush()
	}
	return err
}

// Data writes one complete frame.
func (s *SSE) Data(payload []byte) error {
	if err := s.Begin(); err != nil {
		return err
	}
	if _, err := s.w.Write(payload); err != nil {
		return err
	}
	return s.End()
}

// Event writes one complete frame with an event name, as the Anthropic and Responses streams
// name every frame.
func (s *SSE) Event(name string, payload []byte) error {
	if _, err := s.w.Write(eventPrefix); err != nil {
		return err
	}
	if _, err := io.WriteString(s.w, name); err != nil {
		return err
	}
	if _, err := s.w.Write(eventEnd); err != nil {
		return err
	}
	return s.Data(payload)
}

// Done writes the terminator.
func (s *SSE) Done() error {
	_, err := s.w.Write(doneFrame)
	s.flush()
	return err
}

func (s *SSE) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

// Fail answers a completion that failed before anything was sent: nothing when the caller has
// gone, otherwise the error in the surface's envelope (with the attempts so far, which the error
// carries).
func Fail(w http.ResponseWriter, r *http.Request, render Render, err error) {
	if errors.Is(err, chain.ErrCanceled) {
		return
	}
	render(w, r, err)
}

// Quiet is what a handler returns for a completion that failed before anything was sent: nil
// when the caller has gone (nobody to answer), else err for the route's envelope.
func Quiet(err error) error {
	if errors.Is(err, chain.ErrCanceled) {
		return nil
	}
	return err
}

// Logger is l, or the default logger when an endpoint was built without one.
func Logger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.Default()
}

// Document serves the fixed body of a public document (the JWKS, the API description) with its
// content type and cache policy.
func Document(contentType, cacheControl string, body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", cacheControl)
		_, _ = w.Write(body)
	})
}
