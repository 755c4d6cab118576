// Package openaiapi serves the OpenAI-compatible surface: POST /v1/chat/completions and
// GET /v1/models. Any OpenAI SDK works against it by changing the base URL and key; the gateway's
// chain fields arrive as extensions (extra_body) and its report comes back under `secureai`.
package openaiapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/oaiwire"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/tidwall/sjson"
)

// ModelLister lists the models that can serve now.
type ModelLister interface {
	Available() []*catalog.Model
	// Lookup finds one model that can serve now (a catalog entry, or a name an any_model
	// provider admits).
	Lookup(name string) (*catalog.Model, bool)
}

// Handler serves the surface.
type Handler struct {
	Completions *completion.Service
	Models      ModelLister
	MaxBody     int64
	Log         *slog.Logger
}

// Secureai is the gateway's report in every response.
type Secureai struct {
	ServedModel       string        `json:"served_model"`
	RequestedModel    string        `json:"requested_model"`
	Failover          *chain.Report `json:"failover,omitempty"`
	SMLTPPolicyUsed   string        `json:"smltp_policy_used"`
	SMLTPPolicySource string        `json:"smltp_policy_source"`
	SMLTPPolicyHash   string        `json:"smltp_policy_hash"`
	// SMLTPBundleID is the serving attempt's entitlement token id: GET /receipts/{id} returns the
	// signed receipt.
	SMLTPBundleID string `json:"smltp_bundle_id,omitempty"`
	// BillingFallback: a user-completions key paid by usage-by-model because its points ran out.
	BillingFallback bool `json:"billing_fallback,omitempty"`
	// UsageByModel splits a resumed answer's usage between the interrupted model (estimated) and
	// the one that continued it; the answer's own usage is the whole answer's.
	UsageByModel []completion.ModelUsage `json:"usage_by_model,omitempty"`
	// Dropped names what a surface of another wire could not carry to the Chat Completions shape
	// the chain runs on (thinking blocks, server tools…): the one rule for what cannot cross.
	Dropped []string `json:"dropped,omitempty"`
}

// Surface names this API to completion observers.
const Surface = "openai"

func secureaiJSON(call *completion.Call, served string, report chain.Report, usage []completion.ModelUsage) []byte {
	return ReportJSON(call, served, report, usage, nil)
}

// ReportJSON is the secureai object of call's answer served by served, as every surface carries it
// (SPEC 3.6, 12).
func ReportJSON(call *completion.Call, served string, report chain.Report, usage []completion.ModelUsage, dropped []string) []byte {
	s := Secureai{Dropped: dropped, ServedModel: served, RequestedModel: call.Plan.Targets[0].Model,
		SMLTPPolicyUsed: call.Policy.Name, SMLTPPolicySource: call.Policy.Source, SMLTPPolicyHash: call.Policy.Hash,
		SMLTPBundleID: call.BundleID(), BillingFallback: call.BillingFallback(), UsageByModel: usage}
	if len(call.Plan.Targets) > 1 {
		s.Failover = &report
	}
	b, _ := json.Marshal(s)
	return b
}

// StampReport gives a provider's own answer object passed through (at the path at of obj, ""
// for obj itself) the served model's catalog name and the secureai report, as every answer
// carries them.
func StampReport(obj []byte, at, served string, sec []byte) []byte {
	if at != "" {
		at += "."
	}
	if b, err := sjson.SetBytes(obj, at+"model", served); err == nil {
		obj = b
	}
	if b, err := sjson.SetRawBytes(obj, at+"secureai", sec); err == nil {
		obj = b
	}
	return obj
}

// ReportHeaders tells a client that reads no body, or cannot parse secureai, what happened: the
// served and requested models, the attempts made and whether the chain failed over.
func ReportHeaders(w http.ResponseWriter, call *completion.Call, served string, report chain.Report) {
	h := w.Header()
	h.Set("X-SecureAI-Served-Model", served)
	h.Set("X-SecureAI-Requested-Model", call.Plan.Targets[0].Model)
	h.Set("X-SecureAI-Attempts", strconv.Itoa(len(report.Attempts)))
	h.Set("X-SecureAI-Failover", strconv.FormatBool(report.Occurred))
}

// Chat serves POST /v1/chat/completions.
func (h *Handler) Chat(w http.ResponseWriter, r *http.Request) {
	body, err := httpapi.ReadJSONObject(w, r, h.MaxBody)
	if err != nil {
		Render(w, r, err)
		return
	}
	in, err := read(body)
	if err != nil {
		Render(w, r, err)
		return
	}
	call, err := h.Completions.Open(r.Context(), in.in)
	if err != nil {
		Render(w, r, err)
		return
	}
	h.serve(w, r, call, in.wantUsage)
}

// serve answers call.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, call *completion.Call, wantUsage bool) {
	if call.Input.Stream {
		h.stream(w, r, call, wantUsage)
		return
	}
	c, report, err := call.Complete(r.Context())
	if err != nil {
		httpapi.Fail(w, r, Render, err)
		return
	}
	sec := secureaiJSON(call, c.Served, report, nil)
	ReportHeaders(w, call, c.Served, report)
	answer := oaiwire.Find(c.Response.Body)
	httpapi.StartAnswer(w, answer.Len(c.Served, "secureai", sec))
	_ = answer.Write(w, c.Served, "secureai", sec)
	httpapi.SendAnswer(w)
}

func (h *Handler) stream(w http.ResponseWriter, r *http.Request, call *completion.Call, wantUsage bool) {
	var (
		st     *completion.Stream
		report chain.Report
		err    error
	)
	out := httpapi.AwaitFirstToken(w, r, func() { st, report, err = call.Stream(r.Context()) })
	if err != nil {
		if out != nil { // committed while the chain ran (keep-alives): the error is a frame
			h.failedInStream(r, out, err)
			return
		}
		httpapi.Fail(w, r, Render, err)
		return
	}
	defer st.Close()
	sec := secureaiJSON(call, st.Served, report, nil)
	if out == nil {
		ReportHeaders(w, call, st.Served, report)
		out = httpapi.StartSSE(w)
	}
	out.Coalesce(st.Ready)
	for {
		c, err := st.Next()
		if err == io.EOF {
			if !st.Resumed() || resumedChunk(out, st, secureaiJSON(call, st.Served, st.Report(), st.UsageByModel())) == nil {
				_ = out.Done()
			}
			return
		}
		if err != nil {
			h.interrupted(r, out, err)
			return
		}
		if c.UsageOnly && !wantUsage {
			continue
		}
		if out.Begin() != nil {
			return
		}
		if oaiwire.WriteObject(out.Writer(), c.Data, st.Served, "secureai", sec) != nil || out.End() != nil {
			return // the caller went away; Close cancels the upstream call
		}
		sec = nil // the report rides on the first chunk only
	}
}

// resumedChunk ends a stream another model continued with the report of the resume: one last
// chunk of the same answer with no choices and the secureai object.
func resumedChunk(out *httpapi.SSE, st *completion.Stream, sec []byte) error {
	b, _ := json.Marshal(struct {
		ID       string          `json:"id"`
		Object   string          `json:"object"`
		Created  int64           `json:"created"`
		Model    string          `json:"model"`
		Choices  []struct{}      `json:"choices"`
		Secureai json.RawMessage `json:"secureai"`
	}{st.ChunkID(), "chat.completion.chunk", time.Now().Unix(), st.Served, []struct{}{}, sec})
	return out.Data(b)
}

func (h *Handler) interrupted(r *http.Request, out *httpapi.SSE, err error) {
	if errors.Is(err, chain.ErrCanceled) {
		return // the caller went away: nobody to tell, nothing to warn about
	}
	in := completion.AsInterruption(err)
	httpapi.Logger(h.Log).WarnContext(r.Context(), "stream interrupted after first token", "request_id", identity.RequestID(r.Context()), "code", in.Code, "err", err)
	frame, _ := json.Marshal(map[string]any{"error": map[string]any{"message": in.Message, "type": "server_error", "code": in.Code}})
	_ = out.Data(frame)
}

// failedInStream ends a stream committed before its chain secured a first token (keep-alives)
// whose chain then failed: the error it would have answered, as an error frame.
func (h *Handler) failedInStream(r *http.Request, out *httpapi.SSE, err error) {
	if errors.Is(err, chain.ErrCanceled) {
		return
	}
	f, body := envelope(err)
	httpapi.Logger(h.Log).WarnContext(r.Context(), "stream failed before its first token, after keep-alives", "request_id", identity.RequestID(r.Context()),
		"status", httpapi.Status(f), "code", f.Code, "err", err)
	frame, _ := json.Marshal(body)
	_ = out.Data(frame)
}

// types is the OpenAI envelope's error type for each kind; a provider's refusal keeps its own.
var types = [...]string{
	fault.Internal: "server_error", fault.InvalidRequest: "invalid_request_error",
	fault.Unauthenticated: "invalid_request_error", fault.Forbidden: "permission_error",
	fault.NotFound: "invalid_request_error", fault.MethodNotAllowed: "invalid_request_error",
	fault.Conflict: "invalid_request_error", fault.Unprocessable: "invalid_request_error",
	fault.TooLarge: "invalid_request_error", fault.RequestTimeout: "invalid_request_error",
	fault.RateLimited: "rate_limit_error", fault.QuotaExceeded: "insufficient_quota",
	fault.ChainExhausted: "server_error", fault.ChainRateLimited: "rate_limit_error",
	fault.UpstreamRejected: "invalid_request_error", fault.UpstreamAuth: "server_error",
	fault.ModelUnavailable: "server_error", fault.CircuitOpen: "server_error",
	fault.Unavailable: "server_error", fault.NotImplemented: "server_error",
	fault.Interrupted: "server_error", fault.Canceled: "invalid_request_error",
}

// Render writes err in the OpenAI error envelope; the attempts ride along when a chain ran.
func Render(w http.ResponseWriter, r *http.Request, err error) {
	f, body := envelope(err)
	if v := httpapi.ShouldRetry(f); v != "" {
		w.Header().Set("X-Should-Retry", v)
	}
	httpapi.WriteError(w, r, f, body)
}

// envelope is what this surface says of err, and its error body.
func envelope(err error) (*fault.Error, map[string]any) {
	f := describe(err)
	typ := f.Type
	if typ == "" && int(f.K) < len(types) {
		typ = types[f.K]
	}
	e := map[string]any{"message": fault.Clip(f.Message, fault.MaxMessage), "type": typ,
		"param": nilIfEmpty(fault.Clip(f.Param, fault.MaxParam)), "code": nilIfEmpty(f.Code)}
	if a := chain.AttemptsOf(err); len(a) > 0 {
		e["attempts"] = a
	}
	return f, map[string]any{"error": e}
}

// describe is what this surface says of err: fault.From's answer, except that an unknown model
// is a 404, as OpenAI answers it (its SDKs raise NotFoundError); the classic surface keeps its 400.
func describe(err error) *fault.Error {
	f := fault.From(err)
	if f.K == fault.InvalidRequest && f.Code == "model_not_found" {
		nf := *f
		nf.K = fault.NotFound
		return &nf
	}
	return f
}

// Describe is what this surface would answer for err: its status, title and message (for
// POST /policy-check's checks of an OpenAI-shaped body).
func Describe(err error) (status int, title, message string) {
	f := describe(err)
	return httpapi.Status(f), f.Title, fault.Clip(f.Message, fault.MaxMessage)
}

// model is one entry of the OpenAI models list.
type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func modelOf(m *catalog.Model) model {
	owner := m.Provider
	if owner == "" { // served by several deployments: the name's provider part
		owner, _, _ = strings.Cut(m.Name, "/")
	}
	return model{ID: m.Name, Object: "model", OwnedBy: owner}
}

// ListModels serves GET /v1/models: the models this key may use, in the OpenAI list shape.
func (h *Handler) ListModels(w http.ResponseWriter, r *http.Request) {
	key := identity.Key(r.Context())
	data := []model{}
	for _, m := range h.Models.Available() {
		if key.Allows(m.Name) {
			data = append(data, modelOf(m))
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// GetModel serves GET /v1/models/{id} as OpenAI's API does: the model, or a 404 in the OpenAI
// envelope when this key may not use it (or it cannot serve), never saying which.
func (h *Handler) GetModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if m, ok := h.Models.Lookup(id); ok && identity.Key(r.Context()).Allows(m.Name) {
		httpapi.WriteJSON(w, http.StatusOK, modelOf(m))
		return
	}
	Render(w, r, fault.New(fault.NotFound, "Not found", fmt.Sprintf("The model '%s' does not exist or you do not have access to it.", fault.Clip(id, 128))).
		WithCode("model_not_found").WithParam("model"))
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
