// Package messagesapi serves the Anthropic Messages surface, POST /v1/messages (and
// /v1/messages/count_tokens), for Claude Code and the Anthropic SDKs (SPEC 12): the request is read
// in Anthropic's shape, run through the same failover chain as the chat surfaces, and answered in
// Anthropic's shape — the message object, the SSE event sequence and the error envelope its SDKs
// parse — with the gateway's report in a secureai member of the message.
package messagesapi

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/secureai-gateway/gateway/internal/api/agentwire"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/provider"
)

// Surface names this API to completion observers, events and metrics.
const Surface = "messages"

// Handler serves the surface.
type Handler struct {
	Completions *completion.Service
	MaxBody     int64
	Log         *slog.Logger
}

// Messages serves POST /v1/messages.
func (h *Handler) Messages(w http.ResponseWriter, r *http.Request) error {
	body, err := httpapi.ReadJSONObject(w, r, h.MaxBody)
	if err != nil {
		return err
	}
	req, err := read(body)
	if err != nil {
		return err
	}
	req.in.Native = &provider.Native{Wire: provider.WireMessages, Body: body, Beta: r.Header.Get("Anthropic-Beta")}
	return agentwire.Serve(w, r, h.Completions, req.in, req.dropped, wire{id: messageID(r)}, h.Log)
}

// messageID is the answer's id: the request's, so a message can be found in the logs.
func messageID(r *http.Request) string {
	return "msg_" + strings.TrimPrefix(identity.RequestID(r.Context()), "req_")
}

// wire writes the answers of one request, whose message is named id (agentwire.Wire).
type wire struct{ id string }

// Answer implements agentwire.Wire: the message of a whole answer.
func (w wire) Answer(completion []byte, served string, sec []byte) []byte {
	// The message is about the size of the completion and the report: one allocation.
	return appendMessage(make([]byte, 0, len(completion)+len(sec)+256), w.id, served, completion, sec)
}

// Events implements agentwire.Wire.
func (w wire) Events(out *httpapi.SSE, served string, sec []byte) agentwire.Events {
	return newEvents(out, w.id, served, sec)
}

// Failed implements agentwire.Wire: the error the request would have answered, as Anthropic's
// error event.
func (w wire) Failed(out *httpapi.SSE, _ string, f *fault.Error, _ []byte) error {
	return newEvents(out, w.id, "", nil).failWith(typeOf(f), fault.Clip(f.Message, fault.MaxMessage))
}

// CountTokens serves POST /v1/messages/count_tokens, which Claude Code calls to size its
// context: an estimate (about four bytes a token of the request as the chain would send it),
// since no provider is asked.
func (h *Handler) CountTokens(w http.ResponseWriter, r *http.Request) error {
	body, err := httpapi.ReadJSONObject(w, r, h.MaxBody)
	if err != nil {
		return err
	}
	if !gjson.GetBytes(body, "max_tokens").Exists() { // count_tokens takes no max_tokens
		body, _ = sjson.SetBytes(body, "max_tokens", 1)
	}
	req, err := read(body)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]int{"input_tokens": billing.EstimateTokens(len(req.in.Body))})
	return nil
}

// KeyHeader admits Anthropic's x-api-key as the API key (Claude Code sends it with
// ANTHROPIC_API_KEY; the Anthropic SDKs send Authorization: Bearer). When both come, x-api-key,
// the Messages API's own header, is the one that counts.
func KeyHeader(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := r.Header.Get("X-Api-Key"); k != "" {
			r.Header.Set("Authorization", "Bearer "+k)
		}
		next.ServeHTTP(w, r)
	})
}
