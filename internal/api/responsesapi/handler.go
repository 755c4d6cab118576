// Package responsesapi serves the OpenAI Responses surface, POST /v1/responses, for Codex CLI, the
// OpenAI Agents SDK and the OpenAI SDKs' responses API (SPEC 12): the request is read in the
// Responses shape, run through the same failover chain as the chat surfaces, and answered as a
// Response object or its event stream, with the gateway's report in a secureai member of the
// response. The gateway keeps no responses: a request carries its whole conversation.
package responsesapi

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/provider"
)

// Surface names this API to completion observers, events and metrics.
const Surface = "responses"

// Render writes errors in OpenAI's envelope, as the chat surface does, with x-should-retry.
var Render = openaiapi.Render

// Handler serves the surface.
type Handler struct {
	Completions *completion.Service
	MaxBody     int64
	Log         *slog.Logger
}

// Responses serves POST /v1/responses.
func (h *Handler) Responses(w http.ResponseWriter, r *http.Request) error {
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
	req.in.Native = &provider.Native{Wire: provider.WireResponses, Body: body}
	call, err := h.Completions.Open(r.Context(), req.in)
	if err != nil {
		return err
	}
	obj := &object{id: "resp_" + strings.TrimPrefix(identity.RequestID(r.Context()), "req_"), created: time.Now().Unix(), echo: req.echo}
	if req.in.Stream {
		return h.stream(w, r, call, req, obj)
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
		obj.model, obj.secureai = c.Served, openaiapi.ReportJSON(call, c.Served, report, nil, req.dropped)
		// The Response object is the completion, the report and the request's echo: one allocation.
		b = obj.appendWhole(make([]byte, 0, len(c.Response.Body)+len(obj.secureai)+obj.echo.size()+1024), c.Response.Body)
	}
	httpapi.StartAnswer(w, len(b))
	_, _ = w.Write(b)
	httpapi.SendAnswer(w)
	return nil
}

// failedInStream ends a stream committed before its chain secured a first token (keep-alives)
// whose chain then failed: the error it would have answered, as response.failed with the attempts.
func (h *Handler) failedInStream(r *http.Request, out *httpapi.SSE, call *completion.Call, obj *object, err error) {
	f := fault.From(err)
	httpapi.Logger(h.Log).WarnContext(r.Context(), "stream failed before its first token, after keep-alives", "request_id",
		identity.RequestID(r.Context()), "status", httpapi.Status(f), "code", f.Code, "err", err)
	obj.model = call.Plan.Targets[0].Model
	obj.secureai = openaiapi.ReportJSON(call, "", chain.Report{Attempts: chain.AttemptsOf(err)}, nil, nil)
	_ = newEvents(out, obj).fail(fault.Clip(f.Message, fault.MaxMessage))
}

// stream answers with the Responses event stream: the provider's own events when the serving
// provider speaks Responses (passed through), else the events written from its chat chunks.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, call *completion.Call, req *request, obj *object) error {
	var (
		st     *completion.Stream
		report chain.Report
		err    error
	)
	out := httpapi.AwaitFirstToken(w, r, func() { st, report, err = call.Stream(r.Context()) })
	if err != nil {
		if out != nil && !errors.Is(err, chain.ErrCanceled) {
			// Committed while the chain ran (keep-alives): the error is the stream's error event.
			h.failedInStream(r, out, call, obj, err)
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
	obj.model, obj.secureai = st.Served, openaiapi.ReportJSON(call, st.Served, report, nil, dropped)
	if out == nil {
		openaiapi.ReportHeaders(w, call, st.Served, report)
		out = httpapi.StartSSE(w)
	}
	out.Coalesce(st.Ready)
	ev := newEvents(out, obj)
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
