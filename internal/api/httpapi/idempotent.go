package httpapi

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/idempotency"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// ReplayedHeader marks an answer replayed from an idempotency record.
const ReplayedHeader = "Idempotent-Replayed"

// IdempotencyKey reads the Idempotency-Key header; "" when the request has none.
func IdempotencyKey(r *http.Request) (string, error) {
	vals := r.Header.Values("Idempotency-Key")
	switch {
	case len(vals) == 0:
		return "", nil
	case len(vals) > 1:
		return "", fault.Invalid("Idempotency-Key", "send a single Idempotency-Key header")
	}
	if err := idempotency.CheckKey(vals[0]); err != nil {
		return "", fault.Invalid("Idempotency-Key", err.Error())
	}
	return vals[0], nil
}

// Idempotent runs next at most once per (API key, Idempotency-Key) of route; a request without
// the header passes straight through. A repeat gets the recorded answer without next running
// (nothing checked, attempted or billed again). Only a whole success is recorded: a non-2xx answer
// (a refusal, a 5xx, an exhausted chain) or a stream that broke off before its end releases
// the key, so the caller's retry runs afresh — nothing was billed, and a transient failure must
// not be replayed for 24 hours. A stream is recorded as the exact SSE frames sent and replayed as
// such. A nil guard refuses such requests rather than risk running (and billing) a repeat twice.
// It goes inside Authenticate: the key's id scopes the record. next reads the body as usual
// (ReadJSONObject hands it the body read here).
func Idempotent(guard *idempotency.Guard, render Render, route string, maxBody int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header.Values("Idempotency-Key")) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		key, err := IdempotencyKey(r)
		if err != nil {
			render(w, r, err)
			return
		}
		if guard == nil {
			render(w, r, fault.New(fault.NotImplemented, "Idempotency unavailable",
				"this deployment has no idempotency store; resend without Idempotency-Key").WithCode("idempotency_unavailable"))
			return
		}
		body, err := ReadJSONObject(w, r, maxBody)
		if err != nil {
			render(w, r, err)
			return
		}
		ticket, rec, err := guard.Begin(r.Context(), identity.Key(r.Context()).ID, key, idempotency.RequestHash(route, body))
		switch {
		case err != nil:
			render(w, r, err)
			return
		case rec != nil:
			replay(w, rec)
			return
		}

		rw := &recorder{StatusWriter: StatusWriter{ResponseWriter: w}}
		recorded := false
		// The record is written even when the caller has left (its retry must find it), so the
		// store calls outlive the request's cancellation.
		storeCtx := context.WithoutCancel(r.Context())
		defer func() {
			// Also on a panic: a held key would otherwise block retries until its lease runs out.
			if !recorded {
				if err := ticket.Release(storeCtx); err != nil && !errors.Is(err, idempotency.ErrNotOwner) {
					slog.ErrorContext(r.Context(), "idempotency release failed", "request_id", identity.RequestID(r.Context()), "err", err)
				}
			}
		}()
		next.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), bodyKey{}, body)))
		if !rw.whole() {
			return
		}
		if err := ticket.Complete(storeCtx, rw.status, rw.Header().Get("Content-Type"), rw.buf.Bytes()); err != nil {
			// Not recorded: release the key so a retry runs again instead of waiting out the lease.
			slog.ErrorContext(r.Context(), "idempotency record failed; a retry will run again", "request_id", identity.RequestID(r.Context()), "err", err)
			return
		}
		recorded = true
	})
}

// bodyKey holds the body Idempotent read, for the handler's ReadJSONObject.
type bodyKey struct{}

func replay(w http.ResponseWriter, rec *idempotency.Record) {
	h := w.Header()
	h.Set("Content-Type", rec.ContentType)
	if rec.ContentType == "text/event-stream" {
		h.Set("Cache-Control", "no-cache")
	}
	h.Set(ReplayedHeader, "true")
	w.WriteHeader(rec.Status)
	_, _ = w.Write(rec.Body)
}

// recorder keeps a copy of what the handler sends, while sending it (and flushing SSE frames) as usual.
type recorder struct {
	StatusWriter
	buf bytes.Buffer
}

// whole reports whether the answer is a success that went out whole: a 2xx, and for a stream
// one whose last frame is its surface's end (a stream that broke off, or whose caller left, ends
// without it). An answer sent in full is whole even if its caller left before reading it: served
// is served, and a retry gets it back instead of running (and billing) again.
func (rw *recorder) whole() bool {
	if rw.status/100 != 2 {
		return false
	}
	return !strings.HasPrefix(rw.Header().Get("Content-Type"), "text/event-stream") || endsWhole(rw.buf.Bytes())
}

// streamEnds begin the frame that ends a whole stream on each surface: Chat Completions' (and
// the classic surface's) [DONE], the Messages API's message_stop, the Responses API's
// response.completed or response.incomplete (a length cut, as a whole chat answer with
// finish_reason length is); neither of the last two sends [DONE].
var streamEnds = [][]byte{doneFrame, []byte("event: message_stop\n"), []byte("event: response.completed\n"),
	[]byte("event: response.incomplete\n")}

// endsWhole reports whether the last frame of the SSE body b is one of streamEnds.
func endsWhole(b []byte) bool {
	last := b
	if i := bytes.LastIndex(bytes.TrimSuffix(b, frameEnd), frameEnd); i >= 0 {
		last = b[i+len(frameEnd):]
	}
	for _, end := range streamEnds {
		if bytes.HasPrefix(last, end) {
			return true
		}
	}
	return false
}

func (rw *recorder) Write(b []byte) (int, error) {
	rw.buf.Write(b) // kept even if the caller is gone: the record is what a retry gets
	return rw.StatusWriter.Write(b)
}

// sendAnswer holds a whole answer until it is recorded: it leaves when the handler returns.
func (rw *recorder) sendAnswer() {}

// WriteString is Write for strings: without it StatusWriter's would be promoted, and a string
// sent would be missing from the record.
func (rw *recorder) WriteString(s string) (int, error) {
	rw.buf.WriteString(s)
	return rw.StatusWriter.WriteString(s)
}
