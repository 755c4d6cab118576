// Package responsesapi serves the OpenAI Responses surface, POST /v1/responses, for Codex CLI, the
// OpenAI Agents SDK and the OpenAI SDKs' responses API (SPEC 12): the request is read in the
// Responses shape, run through the same failover chain as the chat surfaces, and answered as a
// Response object or its event stream, with the gateway's report in a secureai member of the
// response. The gateway keeps no responses: a request carries its whole conversation.
package responsesapi

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/agentwire"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
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
	req.in.Native = &provider.Native{Wire: provider.WireResponses, Body: body}
	obj := &object{id: "resp_" + strings.TrimPrefix(identity.RequestID(r.Context()), "req_"), created: time.Now().Unix(), echo: req.echo}
	return agentwire.Serve(w, r, h.Completions, req.in, req.dropped, wire{obj}, h.Log)
}

// wire writes the answers of one request, whose Response object is obj (agentwire.Wire).
type wire struct{ obj *object }

// Answer implements agentwire.Wire: the Response object of a whole answer.
func (w wire) Answer(completion []byte, served string, sec []byte) []byte {
	o := w.obj
	o.model, o.secureai = served, sec
	// The Response object is the completion, the report and the request's echo: one allocation.
	return o.appendWhole(make([]byte, 0, len(completion)+len(sec)+o.echo.size()+1024), completion)
}

// Events implements agentwire.Wire.
func (w wire) Events(out *httpapi.SSE, served string, sec []byte) agentwire.Events {
	w.obj.model, w.obj.secureai = served, sec
	return newEvents(out, w.obj)
}

// Failed implements agentwire.Wire: the error the request would have answered, as
// response.failed with the attempts.
func (w wire) Failed(out *httpapi.SSE, requested string, f *fault.Error, sec []byte) error {
	w.obj.model, w.obj.secureai = requested, sec
	return newEvents(out, w.obj).Fail(fault.Clip(f.Message, fault.MaxMessage))
}
