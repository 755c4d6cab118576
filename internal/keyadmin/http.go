package keyadmin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/httpapi"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/limits"
)

// Handler serves the admin routes and GET /usage. The caller's key is read from the request's
// context (identity.Key), put there by the authentication in front.
type Handler struct {
	Service *Service
	// Limits and Billing feed GET /usage; Limits also GET /admin/api-keys/{id}/usage (nil: that
	// route answers 501).
	Limits  *limits.Limiter
	Billing *billing.Biller
	// Fail renders an error in the surface's envelope by its fault kind.
	Fail httpapi.Render
	// KeyCacheTTL is how long a warm cloud function may keep using a key it has read
	// (SECUREAI_KEY_CACHE_TTL): the most an update or revocation takes to reach it.
	KeyCacheTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// maxBody bounds an admin request body; the largest real one is a few hundred bytes.
const maxBody = 64 << 10

// Admin returns the handler of /admin/api-keys… and /admin/users/{id}. It refuses an anonymous
// caller (401) and a non-admin key (403 "Access denied") itself, so it is safe even if mounted
// without an admin guard.
func (h *Handler) Admin() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /admin/api-keys", h.create)
	mux.HandleFunc("GET /admin/api-keys", h.list)
	mux.HandleFunc("GET /admin/api-keys/{id}", h.get)
	mux.HandleFunc("PATCH /admin/api-keys/{id}", h.update)
	mux.HandleFunc("PUT /admin/api-keys/{id}", h.update)
	mux.HandleFunc("DELETE /admin/api-keys/{id}", h.revoke)
	mux.HandleFunc("GET /admin/api-keys/{id}/usage", h.getKeyUsage)
	mux.HandleFunc("GET /admin/users/{id}", h.getUser)
	mux.HandleFunc("PUT /admin/users/{id}", h.setUser)
	mux.HandleFunc("PATCH /admin/users/{id}", h.setUser)
	// The method-less patterns catch other methods, so they get the envelope, not ServeMux's text.
	mux.HandleFunc("/admin/api-keys", h.notAllowed("GET, POST"))
	mux.HandleFunc("/admin/api-keys/{id}", h.notAllowed("GET, PATCH, PUT, DELETE"))
	mux.HandleFunc("/admin/api-keys/{id}/usage", h.notAllowed("GET"))
	mux.HandleFunc("/admin/users/{id}", h.notAllowed("GET, PATCH, PUT"))
	mux.HandleFunc("/", httpapi.NotFound(h.Fail))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := identity.Key(r.Context())
		switch {
		case k == nil:
			h.Fail(w, r, fault.New(fault.Unauthenticated, "Invalid API key", "An admin API key is required"))
		case !k.Admin:
			h.Fail(w, r, fault.New(fault.Forbidden, "Access denied", "This API key is not an admin key"))
		default:
			mux.ServeHTTP(w, r)
		}
	})
}

func (h *Handler) notAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		h.Fail(w, r, fault.New(fault.MethodNotAllowed, "Method not allowed", fmt.Sprintf("%s is not allowed here; use %s", r.Method, allow)))
	}
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request) {
	var in KeyInput
	if !h.decode(w, r, &in) {
		return
	}
	c, err := h.Service.Create(r.Context(), in)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusCreated, struct {
		Success bool        `json:"success"`
		APIKey  *apikey.Key `json:"apiKey"`
		Secret  string      `json:"secret"`
		Notice  string      `json:"notice"`
	}{true, view(c.Key), c.Secret, "Store the secret now: it is shown only once and cannot be recovered."})
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	limit := 0
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			h.Fail(w, r, fault.Invalid("limit", "limit must be a number from 1 to "+strconv.Itoa(MaxPageSize)))
			return
		}
		limit = n
	}
	q := r.URL.Query()
	p, err := h.Service.List(r.Context(), q.Get("cursor"), limit, Filter{Name: q.Get("name"), UserID: q.Get("userId")})
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	keys := make([]*apikey.Key, len(p.Keys))
	for i, k := range p.Keys {
		keys[i] = view(k)
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Success    bool          `json:"success"`
		APIKeys    []*apikey.Key `json:"apiKeys"`
		NextCursor string        `json:"nextCursor,omitempty"`
	}{true, keys, p.Next})
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	k, err := h.Service.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, keyResponse{Success: true, APIKey: view(k)})
}

type keyResponse struct {
	Success     bool         `json:"success"`
	APIKey      *apikey.Key  `json:"apiKey"`
	Propagation *propagation `json:"propagation,omitempty"`
}

// propagation tells an admin when a change is in force everywhere.
type propagation struct {
	Local           string `json:"local"`
	CloudMaxSeconds int    `json:"cloudMaxSeconds"`
	Message         string `json:"message"`
}

func (h *Handler) propagation() *propagation {
	secs := int(math.Ceil(h.KeyCacheTTL.Seconds()))
	if secs == 0 {
		// No other process caches keys (the local server invalidates its cache on the change).
		return &propagation{Local: "immediate", Message: "In force for the next request."}
	}
	return &propagation{Local: "immediate", CloudMaxSeconds: secs, Message: fmt.Sprintf(
		"In force for the next request here; other warm functions that read this key before the change keep their copy for up to %d s (SECUREAI_KEY_CACHE_TTL).", secs)}
}

func (h *Handler) update(w http.ResponseWriter, r *http.Request) {
	var in KeyInput
	if !h.decode(w, r, &in) {
		return
	}
	k, err := h.Service.Update(r.Context(), r.PathValue("id"), in)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, keyResponse{Success: true, APIKey: view(k), Propagation: h.propagation()})
}

func (h *Handler) revoke(w http.ResponseWriter, r *http.Request) {
	k, err := h.Service.Revoke(r.Context(), r.PathValue("id"))
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, keyResponse{Success: true, APIKey: view(k), Propagation: h.propagation()})
}

func (h *Handler) getUser(w http.ResponseWriter, r *http.Request) {
	u, err := h.Service.User(r.Context(), r.PathValue("id"))
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, userResponse{Success: true, User: userView(u)})
}

func (h *Handler) setUser(w http.ResponseWriter, r *http.Request) {
	var p billing.UserPatch
	if !h.decode(w, r, &p) {
		return
	}
	u, err := h.Service.SetUser(r.Context(), r.PathValue("id"), p)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, userResponse{Success: true, User: userView(u)})
}

type userResponse struct {
	Success bool     `json:"success"`
	User    userJSON `json:"user"`
}

// userJSON is a user's billing record as the admin API shows it, in dollars.
type userJSON struct {
	ID     string `json:"id"`
	Points struct {
		MonthlyAllowance int64     `json:"monthlyAllowance"`
		RenewalDay       int       `json:"renewalDay"`
		Used             int64     `json:"used"`
		Remaining        int64     `json:"remaining"`
		PeriodStart      time.Time `json:"periodStart"`
		NextRenewal      time.Time `json:"nextRenewal"`
	} `json:"points"`
	UsageByModel struct {
		Enabled         bool    `json:"enabled"`
		DollarLimit     float64 `json:"dollarLimit"`
		CurrentSpend    float64 `json:"currentSpend"`
		RemainingBudget float64 `json:"remainingBudget"`
	} `json:"usageByModel"`
	CreatedAt time.Time `json:"createdAt"`
}

func userView(u *billing.User) userJSON {
	var v userJSON
	v.ID, v.CreatedAt = u.ID, u.CreatedAt
	v.Points.MonthlyAllowance, v.Points.RenewalDay, v.Points.Used = u.MonthlyPoints, u.RenewalDay, u.PointsUsed
	v.Points.Remaining, v.Points.PeriodStart, v.Points.NextRenewal = u.PointsRemaining(), u.PeriodStart, u.NextRenewal()
	v.UsageByModel.Enabled, v.UsageByModel.DollarLimit = u.UsageByModel, billing.Dollars(u.DollarLimitMicros)
	v.UsageByModel.CurrentSpend, v.UsageByModel.RemainingBudget = billing.Dollars(u.SpendMicros), billing.Dollars(u.BudgetRemainingMicros())
	return v
}

// view is a key as the API shows it: effective limits, billing mode and policies filled in.
func view(k *apikey.Key) *apikey.Key {
	v := k.Clone()
	fillDefaults(v)
	v.AllowedSMLTPPolicies = k.SMLTPPolicies()
	return v
}

// decode reads a JSON object body strictly: bounded size, no unknown fields, nothing after it.
func (h *Handler) decode(w http.ResponseWriter, r *http.Request, dst any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil && dec.Decode(&struct{}{}) != io.EOF {
		err = errors.New("unexpected data after the JSON object")
	}
	if err == nil {
		return true
	}
	var tooBig *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooBig):
		h.Fail(w, r, fault.New(fault.TooLarge, "Request too large", fmt.Sprintf("The body is over %d bytes", maxBody)))
	case errors.As(err, &typeErr):
		h.Fail(w, r, fault.Invalid(typeErr.Field, fmt.Sprintf("%s must be a JSON %s", typeErr.Field, jsonKind(typeErr.Type.String()))))
	case errors.Is(err, io.EOF):
		h.Fail(w, r, fault.Invalid("body", "a JSON object body is required"))
	default:
		h.Fail(w, r, fault.Invalid("body", "invalid JSON body: "+err.Error()))
	}
	return false
}

func jsonKind(goType string) string {
	switch goType {
	case "string", "apikey.BillingMode", "time.Time":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int64", "float64":
		return "number"
	case "[]string":
		return "array of strings"
	}
	return "object"
}
