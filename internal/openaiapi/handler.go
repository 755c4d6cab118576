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
	ServedModel       string        `json:"served_model"`
	RequestedModel    string        `json:"requested_model"`
	Failover          *chain.Report `json:"failover,omitempty"`
	SMLTPPolicyUsed   string        `json:"smltp_policy_used"`
	SMLTPPolicySource string        `json:"smltp_policy_source"`
	SMLTPPolicyHash   string        `json:"smltp_policy_hash"`
}

func secureaiJSON(in *request, served string, report chain.Report) []byte {
	s := Secureai{ServedModel: served, RequestedModel: in.plan.Targets[0].Model,
		SMLTPPolicyUsed: in.policy.Name, SMLTPPolicySource: in.policy.Source, SMLTPPolicyHash: in.policy.Hash}
	if len(in.plan.Targets) > 1 {
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
	in, err := h.read(httpapi.Key(r.Context()), body)
	if err != nil {
		Render(w, r, apierr.From(err, nil))
		return
	}
	if in.stream {
		h.stream(w, r, in)
		return
	}
	c, report, err := h.Completions.Complete(r.Context(), in.plan, body)
	if err != nil {
		httpapi.Fail(w, r, h.Log, Render, err, report.Attempts)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = oaiwire.WriteObject(w, c.Response.Body, c.Served, "secureai", secureaiJSON(in, c.Served, report))
}

func (h *Handler) stream(w http.ResponseWriter, r *http.Request, in *request) {
	st, report, err := h.Completions.Stream(r.Context(), in.plan, in.body)
	if err != nil {
		httpapi.Fail(w, r, h.Log, Render, err, report.Attempts)
		return
	}
	defer st.Close()
	sec := secureaiJSON(in, st.Served, report)
	out := httpapi.StartSSE(w)
	out.Coalesce(st.Ready)
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
		if c.UsageOnly && !in.wantUsage {
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

// Render writes a Problem in the OpenAI error envelope; the attempts ride along when a chain ran.
func Render(w http.ResponseWriter, r *http.Request, p *apierr.Problem) {
	e := map[string]any{"message": p.Message, "type": p.Type, "param": nilIfEmpty(p.Param), "code": nilIfEmpty(p.Code)}
	if len(p.Attempts) > 0 {
		e["attempts"] = p.Attempts
	}
	httpapi.WriteProblem(w, p, map[string]any{"error": e})
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
