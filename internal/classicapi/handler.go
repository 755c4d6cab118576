// Package classicapi serves the classic completion endpoint, POST /chat/completions (SPEC section
// 5): prompt or messages in, the {success, …, metadata} envelope out, typed SSE frames when
// streaming, and Idempotency-Key replays. It is the OpenAI surface's sibling: the attempt loop and
// the first-token rule are completion.Service's, shared by both.
package classicapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/apierr"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/httpapi"
	"github.com/secureai-gateway/gateway/internal/idempotency"
)

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
	plan           chain.Plan
	id             string
	created        int64
	conversationID string
}

// Chat serves POST /chat/completions.
func (h *Handler) Chat(w http.ResponseWriter, r *http.Request) {
	idemKey, p := idempotencyKey(r)
	if p != nil {
		Render(w, r, p)
		return
	}
	body, p := httpapi.ReadJSONObject(w, r, h.MaxBody)
	if p != nil {
		Render(w, r, p)
		return
	}
	in, p := Parse(body)
	if p != nil {
		Render(w, r, p)
		return
	}
	key := httpapi.Key(r.Context())
	if !key.MayActFor(in.UserID) {
		Render(w, r, apierr.OnBehalfDenied())
		return
	}
	spec, err := chain.ParseSpec(in.Upstream)
	if err != nil {
		Render(w, r, apierr.From(err, nil))
		return
	}
	plan, err := h.Completions.Prepare(key, spec)
	if err != nil {
		Render(w, r, apierr.From(err, nil))
		return
	}
	a := &answer{in: in, plan: plan, id: newID("chatcmpl-"), created: time.Now().Unix(), conversationID: in.ConversationID}
	if a.conversationID == "" {
		a.conversationID = newID("conv_")
	}
	if idemKey == "" {
		h.serve(w, r, a)
		return
	}
	h.idempotent(w, r, key.ID, idemKey, body, a)
}

// serve answers a and reports whether the answer is whole and worth replaying to a repeat.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, a *answer) bool {
	if a.in.Stream {
		return h.stream(w, r, a)
	}
	c, report, err := h.Completions.Complete(r.Context(), a.plan, a.in.Upstream)
	if err != nil {
		httpapi.Fail(w, r, h.Log, Render, err, report.Attempts)
		return false
	}
	out, err := a.envelope(c.Response.Body, c.Response.Usage, c.Served, report)
	if err != nil {
		httpapi.Logger(h.Log).ErrorContext(r.Context(), "building the classic envelope", "request_id", httpapi.RequestID(r.Context()), "err", err)
		Render(w, r, apierr.Internal())
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	// Served is served: even if the caller left before reading, the answer is recorded so a
	// retry gets it back instead of running (and billing) again.
	return true
}
