// Package classicapi serves the classic completion endpoint, POST /chat/completions (SPEC section
// 5): prompt or messages in, the {success, …, metadata} envelope out, typed SSE frames when
// streaming (Idempotency-Key replays are the edge's httpapi.Idempotent). It is the OpenAI surface's sibling: the attempt loop and
// the first-token rule are completion.Service's, shared by both.
package classicapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/completion"
)

// Surface names this API to completion observers.
const Surface = "classic"

// Handler serves the endpoint.
type Handler struct {
	Completions *completion.Service
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
	call, err := h.Completions.Open(r.Context(), in.Input)
	if err != nil {
		Render(w, r, err)
		return
	}
	a := &answer{in: in, call: call, id: newID("chatcmpl-"), created: time.Now().Unix(), conversationID: in.ConversationID}
	if a.conversationID == "" {
		a.conversationID = newID("conv_")
	}
	h.serve(w, r, a)
}

// serve answers a.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, a *answer) {
	if a.call.Input.Stream {
		h.stream(w, r, a)
		return
	}
	c, report, err := a.call.Complete(r.Context())
	if err != nil {
		httpapi.Fail(w, r, Render, err)
		return
	}
	out, err := a.envelope(c.Response.Body, c.Response.Usage, c.Served, report)
	if err != nil {
		Render(w, r, fmt.Errorf("building the classic envelope: %w", err))
		return
	}
	httpapi.StartAnswer(w, len(out))
	_, _ = w.Write(out)
	httpapi.SendAnswer(w)
}
