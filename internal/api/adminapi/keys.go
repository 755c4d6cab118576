package adminapi

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/accountapi"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
	"github.com/secureai-gateway/gateway/internal/limits"
)

// Keys serves /admin/api-keys… and /admin/users/{id}.
type Keys struct {
	Service *keyadmin.Service
	// Limits feeds GET /admin/api-keys/{id}/usage (nil: that route answers 501).
	Limits *limits.Limiter
	// Now is the clock of the usage windows; nil means time.Now.
	Now func() time.Time
	// KeyCacheTTL is how long a warm cloud function may keep using a key it has read
	// (SECUREAI_KEY_CACHE_TTL): the most an update or revocation takes to reach it.
	KeyCacheTTL time.Duration
}

// Routes is the table of the key and user routes.
func (h *Keys) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "POST /admin/api-keys", Handle: h.create},
		{Pattern: "GET /admin/api-keys", Handle: h.list},
		{Pattern: "GET /admin/api-keys/{id}", Handle: h.get},
		{Pattern: "PATCH /admin/api-keys/{id}", Handle: h.update},
		{Pattern: "PUT /admin/api-keys/{id}", Handle: h.update},
		{Pattern: "DELETE /admin/api-keys/{id}", Handle: h.revoke},
		{Pattern: "GET /admin/api-keys/{id}/usage", Handle: h.getKeyUsage},
		{Pattern: "GET /admin/users", Handle: h.listUsers},
		{Pattern: "GET /admin/users/{id}", Handle: h.getUser},
		{Pattern: "PUT /admin/users/{id}", Handle: h.setUser},
		{Pattern: "PATCH /admin/users/{id}", Handle: h.setUser},
	}
}

func (h *Keys) create(w http.ResponseWriter, r *http.Request) error {
	var in keyadmin.KeyInput
	if err := httpapi.DecodeJSON(w, r, httpapi.MaxAdminBody, &in); err != nil {
		return err
	}
	c, err := h.Service.Create(r.Context(), in)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusCreated, struct {
		Success bool        `json:"success"`
		APIKey  *apikey.Key `json:"apiKey"`
		Secret  string      `json:"secret"`
		Notice  string      `json:"notice"`
	}{true, keyadmin.View(c.Key), c.Secret, "Store the secret now: it is shown only once and cannot be recovered."})
	return nil
}

func (h *Keys) list(w http.ResponseWriter, r *http.Request) error {
	limit := 0
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fault.Invalid("limit", "limit must be a number from 1 to "+strconv.Itoa(keyadmin.MaxPageSize))
		}
		limit = n
	}
	q := r.URL.Query()
	p, err := h.Service.List(r.Context(), q.Get("cursor"), limit, keyadmin.Filter{Name: q.Get("name"), UserID: q.Get("userId")})
	if err != nil {
		return err
	}
	keys := make([]*apikey.Key, len(p.Keys))
	for i, k := range p.Keys {
		keys[i] = keyadmin.View(k)
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Success    bool          `json:"success"`
		APIKeys    []*apikey.Key `json:"apiKeys"`
		NextCursor string        `json:"nextCursor,omitempty"`
	}{true, keys, p.Next})
	return nil
}

func (h *Keys) get(w http.ResponseWriter, r *http.Request) error {
	k, err := h.Service.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, keyResponse{Success: true, APIKey: keyadmin.View(k)})
	return nil
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

func (h *Keys) propagation() *propagation {
	secs := int(math.Ceil(h.KeyCacheTTL.Seconds()))
	if secs == 0 {
		// No other process caches keys (the local server invalidates its cache on the change).
		return &propagation{Local: "immediate", Message: "In force for the next request."}
	}
	return &propagation{Local: "immediate", CloudMaxSeconds: secs, Message: fmt.Sprintf(
		"In force for the next request here; other warm functions that read this key before the change keep their copy for up to %d s (SECUREAI_KEY_CACHE_TTL).", secs)}
}

func (h *Keys) update(w http.ResponseWriter, r *http.Request) error {
	var in keyadmin.KeyInput
	if err := httpapi.DecodeJSON(w, r, httpapi.MaxAdminBody, &in); err != nil {
		return err
	}
	k, err := h.Service.Update(r.Context(), r.PathValue("id"), in)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, keyResponse{Success: true, APIKey: keyadmin.View(k), Propagation: h.propagation()})
	return nil
}

func (h *Keys) revoke(w http.ResponseWriter, r *http.Request) error {
	k, err := h.Service.Revoke(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, keyResponse{Success: true, APIKey: keyadmin.View(k), Propagation: h.propagation()})
	return nil
}

// getKeyUsage serves GET /admin/api-keys/{id}/usage: any key's request counts against its limits
// and when each window resets, as GET /usage shows its caller's own. Reading it counts nothing.
func (h *Keys) getKeyUsage(w http.ResponseWriter, r *http.Request) error {
	if h.Limits == nil {
		return fault.New(fault.NotImplemented, "Not implemented", "this deployment keeps no request counts (no limits table)")
	}
	k, err := h.Service.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	now := time.Now()
	if h.Now != nil {
		now = h.Now()
	}
	u, err := accountapi.ReadKeyUsage(r.Context(), h.Limits, k, now)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Success bool                `json:"success"`
		Usage   accountapi.KeyUsage `json:"usage"`
	}{true, u})
	return nil
}

// listUsers answers {"success":true,"users":[…],"nextCursor"?}: every user by id, a page at a
// time (?limit=, ?cursor=).
func (h *Keys) listUsers(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fault.Invalid("limit", fmt.Sprintf("limit must be a number from 1 to %d", keyadmin.MaxPageSize))
		}
		limit = n
	}
	p, err := h.Service.ListUsers(r.Context(), q.Get("cursor"), limit)
	if err != nil {
		return err
	}
	out := struct {
		Success    bool       `json:"success"`
		Users      []userJSON `json:"users"`
		NextCursor string     `json:"nextCursor,omitempty"`
	}{Success: true, Users: make([]userJSON, len(p.Users)), NextCursor: p.Next}
	for i, u := range p.Users {
		out.Users[i] = userView(u)
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Keys) getUser(w http.ResponseWriter, r *http.Request) error {
	u, err := h.Service.User(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, userResponse{Success: true, User: userView(u)})
	return nil
}

func (h *Keys) setUser(w http.ResponseWriter, r *http.Request) error {
	var p billing.UserPatch
	if err := httpapi.DecodeJSON(w, r, httpapi.MaxAdminBody, &p); err != nil {
		return err
	}
	u, err := h.Service.SetUser(r.Context(), r.PathValue("id"), p)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, userResponse{Success: true, User: userView(u)})
	return nil
}

type userResponse struct {
	Success bool     `json:"success"`
	User    userJSON `json:"user"`
}

// userJSON is a user's billing record as the admin API shows it, in dollars.
type userJSON struct {
	ID     string `json:"id"`
	Points struct {
		MonthlyAllowance *int64    `json:"monthlyAllowance"` // null: no quota
		RenewalDay       int       `json:"renewalDay"`
		Used             int64     `json:"used"`
		Remaining        *int64    `json:"remaining"` // null: no quota
		PeriodStart      time.Time `json:"periodStart"`
		NextRenewal      time.Time `json:"nextRenewal"`
	} `json:"points"`
	UsageByModel struct {
		Enabled         bool    `json:"enabled"`
		DollarLimit     float64 `json:"dollarLimit"`
		CurrentSpend    float64 `json:"currentSpend"`
		RemainingBudget float64 `json:"remainingBudget"`
	} `json:"usageByModel"`
	// BudgetThresholds are the percentages announced as billing:budget_threshold (the defaults
	// when the user set none; empty: none).
	BudgetThresholds []int     `json:"budgetThresholds"`
	CreatedAt        time.Time `json:"createdAt"`
}

func userView(u *billing.User) userJSON {
	var v userJSON
	v.ID, v.CreatedAt = u.ID, u.CreatedAt
	v.Points.MonthlyAllowance, v.Points.Remaining = u.Quota()
	v.Points.RenewalDay, v.Points.Used = u.RenewalDay, u.PointsUsed
	v.Points.PeriodStart, v.Points.NextRenewal = u.PeriodStart, u.NextRenewal()
	v.UsageByModel.Enabled, v.UsageByModel.DollarLimit = u.UsageByModel, billing.Dollars(u.DollarLimitMicros)
	v.UsageByModel.CurrentSpend, v.UsageByModel.RemainingBudget = billing.Dollars(u.SpendMicros), billing.Dollars(u.BudgetRemainingMicros())
	v.BudgetThresholds = append([]int{}, u.Thresholds()...)
	return v
}
