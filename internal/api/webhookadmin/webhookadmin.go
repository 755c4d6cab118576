// Package webhookadmin serves the admin routes of webhooks and the audit log: /admin/webhooks
// (list with the event catalog, create, read, update, delete, rotate-secret, test, recent
// deliveries) and GET /admin/audit-logs. It authenticates no one: the server wraps these handlers
// in its admin check, and errors go through the server's Fail, which renders fault kinds.
package webhookadmin

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/emit"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// Handlers holds the routes' dependencies.
type Handlers struct {
	Webhooks   webhook.Store
	Dispatcher *webhook.Dispatcher // sends test deliveries
	Guard      webhook.URLChecker
	Audit      audit.Store
	Events     event.Publisher // admin:webhook_* records
	Now        func() time.Time
}

// Routes is the table of the webhook and audit-log routes.
func (h *Handlers) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "GET /admin/webhooks", Handle: h.list},
		{Pattern: "POST /admin/webhooks", Handle: h.create},
		{Pattern: "GET /admin/webhooks/{id}", Handle: h.get},
		{Pattern: "PATCH /admin/webhooks/{id}", Handle: h.update},
		{Pattern: "DELETE /admin/webhooks/{id}", Handle: h.delete},
		{Pattern: "POST /admin/webhooks/{id}/rotate-secret", Handle: h.rotate},
		{Pattern: "POST /admin/webhooks/{id}/test", Handle: h.test},
		{Pattern: "GET /admin/webhooks/{id}/deliveries", Handle: h.deliveries},
		{Pattern: "GET /admin/audit-logs", Handle: h.auditLogs},
	}
}

// record publishes the admin event of a change; before and after are audited views (no secret,
// no URL path or query).
func (h *Handlers) record(r *http.Request, t event.Type, action, id string, before, after any) {
	now := h.Now()
	ev, err := event.AdminEvent(t, event.Admin{Action: action, Target: event.Target{Kind: "webhook", ID: id}, Subject: emit.Subject(r.Context()), Time: now}, before, after, now)
	if err != nil {
		return // the types here are all admin types of the catalog
	}
	h.Events.Publish(r.Context(), ev)
}

func (h *Handlers) list(w http.ResponseWriter, r *http.Request) error {
	eps, err := h.Webhooks.Endpoints(r.Context())
	if err != nil {
		return err
	}
	out := make([]webhook.Endpoint, 0, len(eps))
	for _, e := range eps {
		out = append(out, e.Public())
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"success": true, "webhooks": out, "eventCatalog": event.Catalog()})
	return nil
}

func (h *Handlers) create(w http.ResponseWriter, r *http.Request) error {
	var in webhook.Input
	if err := httpapi.DecodeJSON(w, r, httpapi.MaxAdminBody, &in); err != nil {
		return err
	}
	ep, err := webhook.Create(r.Context(), in, h.Guard, h.Now())
	if err == nil {
		err = h.Webhooks.CreateEndpoint(r.Context(), ep)
	}
	if err != nil {
		return err
	}
	h.record(r, event.AdminWebhookCreated, "create", ep.ID, nil, ep.Audited())
	// The only response, with rotate-secret's, that carries the secret.
	httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"success": true, "webhook": ep})
	return nil
}

func (h *Handlers) get(w http.ResponseWriter, r *http.Request) error {
	ep, err := h.Webhooks.Endpoint(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"success": true, "webhook": ep.Public()})
	return nil
}

func (h *Handlers) update(w http.ResponseWriter, r *http.Request) error {
	var in webhook.Input
	if err := httpapi.DecodeJSON(w, r, httpapi.MaxAdminBody, &in); err != nil {
		return err
	}
	if err := in.CheckURL(r.Context(), h.Guard); err != nil {
		return err
	}
	var before webhook.Audited
	ep, err := h.Webhooks.UpdateEndpoint(r.Context(), r.PathValue("id"), func(e *webhook.Endpoint) error {
		before = e.Audited()
		return e.Apply(in, h.Now())
	})
	if err != nil {
		return err
	}
	h.record(r, event.AdminWebhookUpdated, "update", ep.ID, before, ep.Audited())
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"success": true, "webhook": ep.Public()})
	return nil
}

func (h *Handlers) delete(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	before, err := h.Webhooks.Endpoint(r.Context(), id)
	if err == nil {
		err = h.Webhooks.DeleteEndpoint(r.Context(), id)
	}
	if err != nil {
		return err
	}
	h.record(r, event.AdminWebhookDeleted, "delete", id, before.Audited(), nil)
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"success": true, "deleted": id})
	return nil
}

func (h *Handlers) rotate(w http.ResponseWriter, r *http.Request) error {
	// An optional body {"overlapSeconds": n}: how long the old secret keeps signing (default a
	// day; 0 cuts it at once).
	var in struct {
		OverlapSeconds *int64 `json:"overlapSeconds"`
	}
	if r.ContentLength != 0 {
		if err := httpapi.DecodeJSON(w, r, httpapi.MaxAdminBody, &in); err != nil {
			return err
		}
	}
	overlap := webhook.DefaultRotationOverlap
	if in.OverlapSeconds != nil {
		overlap = time.Duration(*in.OverlapSeconds) * time.Second
		if *in.OverlapSeconds < 0 || overlap > webhook.MaxRotationOverlap {
			return fault.Invalid("overlapSeconds", fmt.Sprintf("overlapSeconds must be from 0 to %d", int64(webhook.MaxRotationOverlap/time.Second)))
		}
	}
	ep, err := h.Webhooks.UpdateEndpoint(r.Context(), r.PathValue("id"), func(e *webhook.Endpoint) error {
		e.Rotate(overlap, h.Now())
		return nil
	})
	if err != nil {
		return err
	}
	h.record(r, event.AdminWebhookSecretRotated, "rotate_secret", ep.ID, nil, nil)
	view := ep.Public() // the new secret is shown once, here; the old one never again
	view.Secret = ep.Secret
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"success": true, "webhook": view})
	return nil
}

func (h *Handlers) test(w http.ResponseWriter, r *http.Request) error {
	// No body, or an empty object: the test event is the gateway's own.
	if err := httpapi.DecodeOptionalJSON(w, r, httpapi.MaxAdminBody, &struct{}{}); err != nil {
		return err
	}
	a, err := h.Dispatcher.Test(r.Context(), r.PathValue("id"), emit.Subject(r.Context()), h.Now())
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"success": a.Succeeded(), "delivery": a})
	return nil
}

// deliveriesLimit is how many recent attempts a listing returns unless asked for fewer.
const deliveriesLimit = 50

func (h *Handlers) deliveries(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	limit := deliveriesLimit
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > webhook.AttemptsKept {
			return fault.Invalid("limit", fmt.Sprintf("limit must be an integer from 1 to %d", webhook.AttemptsKept))
		}
		limit = n
	}
	if _, err := h.Webhooks.Endpoint(r.Context(), id); err != nil {
		return err
	}
	as, err := h.Webhooks.Attempts(r.Context(), id, limit)
	if err != nil {
		return err
	}
	if as == nil {
		as = []webhook.Attempt{}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"success": true, "deliveries": as})
	return nil
}

func (h *Handlers) auditLogs(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	q, err := audit.Parse(audit.Params{StartDate: v.Get("startDate"), EndDate: v.Get("endDate"), Type: v.Get("type"),
		Severity: v.Get("severity"), UserID: v.Get("userId"), APIKeyID: v.Get("apiKeyId"), Search: v.Get("search"),
		Limit: v.Get("limit"), Cursor: v.Get("cursor")}, h.Now())
	if err != nil {
		return err
	}
	page, err := h.Audit.Query(r.Context(), q)
	if err != nil {
		return err
	}
	if page.Entries == nil {
		page.Entries = []audit.Entry{}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"success": true, "logs": page.Entries,
		"pagination": map[string]any{"limit": q.Limit, "nextCursor": page.Next, "hasMore": page.Next != ""},
		"filters":    map[string]any{"startDate": q.Start, "endDate": q.End}})
	return nil
}
