package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/identity"
)

// AccessLog writes one structured line per request once it is answered: request id, route, key
// id (never the secret), status, the served model and attempts of a completion, latency and bytes
// sent. A request whose client went away before any answer is logged with status 499 and
// cancelled=true, not as the 200 net/http would imply. The same JSON lines land in CloudWatch in the cloud (Logs Insights queries them). It goes
// inside WithRequestID and outside authentication, so refusals are logged too.
func AccessLog(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		r, q := stateOf(r)
		if q.logged { // an outer access line has this state: this one gets its own
			q = &request{id: q.id, key: q.key, ticket: q.ticket}
			r = r.WithContext(identity.WithCaller(r.Context(), q))
		}
		q.logged = true
		aw := &q.w
		aw.ResponseWriter = w
		next.ServeHTTP(aw, r)
		rec := &q.access
		status := aw.StatusOf(r)
		var buf [9]slog.Attr // every attribute below: no allocation for the list
		attrs := append(buf[:0],
			slog.String("request_id", q.id),
			slog.String("route", r.Method+" "+r.URL.Path),
			slog.Int("status", status),
			slog.Int64("latency_ms", time.Since(start).Milliseconds()),
			slog.Int64("bytes", aw.bytes),
		)
		if status == StatusClientClosed {
			attrs = append(attrs, slog.Bool("cancelled", true))
		}
		if rec.keyID != "" {
			attrs = append(attrs, slog.String("key_id", rec.keyID))
		}
		if rec.completion {
			attrs = append(attrs, slog.String("served_model", rec.served), slog.Int("attempts", rec.attempts))
		}
		log.LogAttrs(r.Context(), slog.LevelInfo, "access", attrs...)
	})
}

// access is what the handlers learn that the access line reports.
type access struct {
	keyID      string
	completion bool
	served     string
	attempts   int
}

// NoteCompletion records, for the access line, the model that served a completion ("" when none
// did) and how many attempts it made.
func NoteCompletion(ctx context.Context, keyID, served string, attempts int) {
	if q := stateIn(ctx); q != nil {
		q.access.keyID, q.access.completion, q.access.served, q.access.attempts = keyID, true, served, attempts
	}
}

// NoteKey records, for the access line, the id of the key a request acts as when no
// authentication of the API found it (the console's session).
func NoteKey(ctx context.Context, keyID string) {
	if q := stateIn(ctx); q != nil {
		q.access.keyID = keyID
	}
}

// StatusWriter notes the status and the bytes sent, keeping flushes working for streams: the
// access line and the tracer's server span read what a handler answered from it.
type StatusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

// Status is the status sent: 200 when the handler wrote nothing (net/http's implicit answer).
func (w *StatusWriter) Status() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// StatusClientClosed is nginx's "client closed request": the status logged and traced for a
// request whose client went away before any answer. It is never sent — nobody is left to read it.
const StatusClientClosed = 499

// StatusOf is what r was answered, for a log line or a span: StatusClientClosed when nothing was
// written and r's client went away (its context canceled: net/http cancels it when the connection
// closes), else Status — a handler that wrote nothing for a caller still there did send a 200.
func (w *StatusWriter) StatusOf(r *http.Request) int {
	if w.status == 0 && errors.Is(r.Context().Err(), context.Canceled) {
		return StatusClientClosed
	}
	return w.Status()
}

func (w *StatusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *StatusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// WriteString lets writers of strings (an answer's JSON is partly written as strings) reach the
// real writer's WriteString instead of converting each string to a new []byte.
func (w *StatusWriter) WriteString(s string) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := io.WriteString(w.ResponseWriter, s)
	w.bytes += int64(n)
	return n, err
}

// Flush keeps SSE frames leaving at once.
func (w *StatusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *StatusWriter) sendAnswer() { SendAnswer(w.ResponseWriter) }

// Unwrap lets http.ResponseController reach the real writer.
func (w *StatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
