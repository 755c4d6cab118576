// Package openaiapi serves the OpenAI-compatible surface: POST /v1/chat/completions and
// GET /v1/models. Any OpenAI SDK works against it by changing the base URL and key; the gateway's
// chain fields arrive as extensions (extra_body) and its report comes back under `secureai`.
package openaiapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"

	"github.com/secureai-gateway/gateway/internal/apierr"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/httpapi"
	"github.com/secureai-gateway/gateway/internal/oaiwire"
	"github.com/tidwall/gjson"
)

// ModelLister lists the models that can serve now.
type ModelLister interface {
	Available() []*catalog.Model
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
	ServedModel    string        `json:"served_model"`
	RequestedModel string        `json:"requested_model"`
	Failover       *chain.Report `json:"failover,omitempty"`
}

func secureaiJSON(plan chain.Plan, served string, report chain.Report) []byte {
	s := Secureai{ServedModel: served, RequestedModel: plan.Targets[0].Model}
	if len(plan.Targets) > 1 {
		s.Failover = &report
	}
	b, _ := json.Marshal(s)
	return b
}

// Chat serves POST /v1/chat/completions.
func (h *Handler) Chat(w http.ResponseWriter, r *http.Request) {
	body, p := httpapi.ReadJSONObject(w, r, h.MaxBody)
	if p != nil {
		Render(w, r, p)
		return
	}
	if p := validate(body); p != nil {
		Render(w, r, p)
		return
	}
	spec, err := chain.ParseSpec(body)
	if err != nil {
		Render(w, r, apierr.From(err, nil))
		return
	}
	plan, err := h.Completions.Prepare(httpapi.Key(r.Context()), spec)
	if err != nil {
		Render(w, r, apierr.From(err, nil))
		return
	}
	if gjson.GetBytes(body, "stream").Bool() {
		h.stream(w, r, plan, body)
		return
	}
	c, report, err := h.Completions.Complete(r.Context(), plan, body)
	if err != nil {
		httpapi.Fail(w, r, h.Log, Render, err, report.Attempts)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = oaiwire.WriteObject(w, c.Response.Body, c.Served, "secureai", secureaiJSON(plan, c.Served, report))
}

func (h *Handler) stream(w http.ResponseWriter, r *http.Request, plan chain.Plan, body []byte) {
	st, report, err := h.Completions.Stream(r.Context(), plan, body)
	if err != nil {
		httpapi.Fail(w, r, h.Log, Render, err, report.Attempts)
		return
	}
	defer st.Close()
	wantUsage := gjson.GetBytes(body, "stream_options.include_usage").Bool()
	sec := secureaiJSON(plan, st.Served, report)
	out := httpapi.StartSSE(w)
	for {
		c, err := st.Next()
		if err == io.EOF {
			_ = out.Done()
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

func (h *Handler) interrupted(r *http.Request, out *httpapi.SSE, err error) {
	in := completion.AsInterruption(err)
	httpapi.Logger(h.Log).WarnContext(r.Context(), "stream interrupted after first token", "request_id", httpapi.RequestID(r.Context()), "code", in.Code, "err", err)
	frame, _ := json.Marshal(map[string]any{"error": map[string]any{"message": in.Message, "type": "server_error", "code": in.Code}})
	_ = out.Data(frame)
}

// validate checks what the gateway itself needs; everything else is the provider's to judge.
func validate(body []byte) *apierr.Problem {
	m := gjson.GetBytes(body, "messages")
	if !m.IsArray() || len(m.Array()) == 0 {
		return apierr.BadRequest("messages", "messages is required: a non-empty array of chat messages")
	}
	if s := gjson.GetBytes(body, "stream"); s.Exists() && s.Type != gjson.True && s.Type != gjson.False && s.Type != gjson.Null {
		return apierr.BadRequest("stream", "stream must be a boolean")
	}
	return nil
}

// Render writes a Problem in the OpenAI error envelope; the attempts ride along when a chain ran.
func Render(w http.ResponseWriter, r *http.Request, p *apierr.Problem) {
	e := map[string]any{"message": p.Message, "type": p.Type, "param": nilIfEmpty(p.Param), "code": nilIfEmpty(p.Code)}
	if len(p.Attempts) > 0 {
		e["attempts"] = p.Attempts
	}
	httpapi.WriteJSON(w, p.Status, map[string]any{"error": e})
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ListModels serves GET /v1/models: the models this key may use, in the OpenAI list shape.
func (h *Handler) ListModels(w http.ResponseWriter, r *http.Request) {
	key := httpapi.Key(r.Context())
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	data := []model{}
	for _, m := range h.Models.Available() {
		if key.Allows(m.Name) {
			data = append(data, model{ID: m.Name, Object: "model", OwnedBy: m.Provider})
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}
