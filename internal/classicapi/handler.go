// Package classicapi serves the classic completion endpoint, POST /chat/completions (SPEC section
// 5): prompt or messages in, the {success, …, metadata} envelope out, typed SSE frames when
// streaming, and Idempotency-Key replays. It is the OpenAI surface's sibling: the attempt loop and
// the first-token rule are completion.Service's, shared by both.
package classicapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/httpapi"
	"github.com/secureai-gateway/gateway/internal/idempotency"
)

// route names this endpoint in request hashes, so a key used here and on another route with the
// same body is not mistaken for a repeat.
const route = "POST /chat/completions"

// Surface names this API to completion observers.
const Surface = "classic"

// Handler serves the endpoint.
type Handler struct {
	Completions *completion.Service
	// Idempotency runs Idempotency-Key requests at most once; nil refuses such requests rather
	// than risk running (and billing) a repeat twice.
	Idempotency *idempotency.Guard
	MaxBody     int64
	Log         *slog.Logger
}

// answer is one request on its way to being served.
type answer struct {
	in             *Input
	call           *completion.Call
	id             string
	created        int64
	conversationID string
}

// Chat serves POST /chat/completions.
func (h *Handler) Chat(w http.ResponseWriter, r *http.Request) {
	idemKey, err := httpapi.IdempotencyKey(r)
	if err != nil {
		Render(w, r, err)
		return
	}
	body, err := httpapi.ReadJSONObject(w, r, h.MaxBody)
	if err != nil {
		Render(w, r, err)
		return
	}
	in, err := Parse(body)
	if err != nil {
		Render(w, r, err)
		return
	}
	call, err := h.Completions.Open(r.Context(), in.Completion())
	if err != nil {
		Render(w, r, err)
		return
	}
	a := &answer{in: in, call: call, id: newID("chatcmpl-"), created: time.Now().Unix(), conversationID: in.ConversationID}
	if a.conversationID == "" {
		a.conversationID = newID("conv_")
	}
	if idemKey == "" {
		h.serve(w, r, a)
		return
	}
	httpapi.Idempotent(w, r, h.Idempotency, Render, route, idemKey, body, func(w http.ResponseWriter) bool { return h.serve(w, r, a) })
}

// Completion is what this request asks of the completion service.
func (in *Input) Completion() completion.Input {
	return completion.Input{Surface: Surface, Body: in.Upstream, Policy: in.Policy, UserID: in.UserID, Stream: in.Stream, MaxTokens: in.MaxTokens}
}

// serve answers a and reports whether the answer is whole and worth replaying to a repeat.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, a *answer) bool {
	if a.in.Stream {
		return h.stream(w, r, a)
	}
	c, report, err := a.call.Complete(r.Context())
	if err != nil {
		httpapi.Fail(w, r, Render, err)
		return false
	}
	out, err := a.envelope(c.Response.Body, c.Response.Usage, c.Served, report)
	if err != nil {
		Render(w, r, fmt.Errorf("building the classic envelope: %w", err))
		return false
	}
	httpapi.StartAnswer(w, len(out))
	_, _ = w.Write(out)
	httpapi.SendAnswer(w)
	// Served is served: even if the caller left before reading, the answer is recorded so a
	// retry gets it back instead of running (and billing) again.
	return true
}
