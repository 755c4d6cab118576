// Package messagesapi serves the Anthropic Messages surface, POST /v1/messages (and
// /v1/messages/count_tokens), for Claude Code and the Anthropic SDKs (SPEC 12): the request is read
// in Anthropic's shape, run through the same failover chain as the chat surfaces, and answered in
// Anthropic's shape — the message object, the SSE event sequence and the error envelope its SDKs
// parse — with the gateway's report in a secureai member of the message.
package messagesapi

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/chain"
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
	if err := req.in.Chain.FromHeaders(r.Header.Get(chain.HeaderModels), r.Header.Get(chain.HeaderFallbackModels)); err != nil {
		return err
	}
	req.in.Native = &provider.Native{Wire: provider.WireMessages, Body: body, Beta: r.Header.Get("Anthropic-Beta")}
	call, err := h.Completions.Open(r.Context(), req.in)
	if err != nil {
		return err
	}
	if req.in.Stream {
		return h.stream(w, r, call, req)
	}
	c, report, err := call.Complete(r.Context())
	if err != nil {
		return httpapi.Quiet(err)
	}
	openaiapi.ReportHeaders(w, call, c.Served, report)
	var b []byte
	if c.Response.Native {
		b = openaiapi.StampReport(c.Response.Body, "", c.Served, openaiapi.ReportJSON(call, c.Served, report, nil, nil))
	} else {
		sec := openaiapi.ReportJSON(call, c.Served, report, nil, req.dropped)
		// The message is about the size of the completion and the report: one allocation.
		b = appendMessage(make([]byte, 0, len(c.Response.Body)+len(sec)+256), messageID(r), c.Served, c.Response.Body, sec)
	}
	httpapi.StartAnswer(w, len(b))
	_, _ = w.Write(b)
	httpapi.SendAnswer(w)
	return nil
}

// messageID is the answer's id: the request's, so a message can be found in the logs.
func messageID(r *http.Request) string {
	return "msg_" + strings.TrimPrefix(identity.RequestID(r.Context()), "req_")
}

// stream answers with Anthropic's event stream: the provider's own events when the serving
// model speaks Messages (passed through), else the events written from its chat chunks.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, call *completion.Call, req *request) error {
	var (
		st     *completion.Stream
		report chain.Report
		err    error
	)
	out := httpapi.AwaitFirstToken(w, r, func() { st, report, err = call.Stream(r.Context()) })
	if err != nil {
		if out != nil && !errors.Is(err, chain.ErrCanceled) {
			// Committed while the chain ran (keep-alives): the error is the stream's error event.
			h.failedInStream(r, out, err)
			return nil
		}
		return httpapi.Quiet(err)
	}
	defer st.Close()
	c, err := st.Next() // the first chunk, already in hand
	dropped := req.dropped
	if c.Native {
		dropped = nil // nothing was translated
	}
	if out == nil {
		openaiapi.ReportHeaders(w, call, st.Served, report)
		out = httpapi.StartSSE(w)
	}
	out.Coalesce(st.Ready)
	ev := newEvents(out, messageID(r), st.Served, openaiapi.ReportJSON(call, st.Served, report, nil, dropped))
	if !c.Native && out.Batch(ev.start) != nil {
		return nil
	}
	for ; err == nil; c, err = st.Next() {
		ev.next = c
		if out.Batch(ev.write) != nil {
			return nil // the caller went away; Close cancels the upstream call
		}
	}
	switch {
	case err == io.EOF:
		_ = out.Batch(ev.finish)
	case !errors.Is(err, chain.ErrCanceled):
		in := completion.AsInterruption(err)
		httpapi.Logger(h.Log).WarnContext(r.Context(), "stream interrupted after first token", "request_id",
			identity.RequestID(r.Context()), "code", in.Code, "err", err)
		_ = ev.fail(in.Message)
	}
	return nil
}

// failedInStream ends a stream committed before its chain secured a first token (keep-alives)
// whose chain then failed: the error it would have answered, as Anthropic's error event.
func (h *Handler) failedInStream(r *http.Request, out *httpapi.SSE, err error) {
	f := fault.From(err)
	httpapi.Logger(h.Log).WarnContext(r.Context(), "stream failed before its first token, after keep-alives", "request_id",
		identity.RequestID(r.Context()), "status", httpapi.Status(f), "code", f.Code, "err", err)
	_ = newEvents(out, "", "", nil).failWith(typeOf(f), fault.Clip(f.Message, fault.MaxMessage))
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
