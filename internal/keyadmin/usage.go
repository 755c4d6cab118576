package keyadmin

import (
	"context"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/httpapi"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/limits"
)

// usageJSON is GET /usage (SPEC 7), in the snake_case of the completion surfaces.
type usageJSON struct {
	Success bool `json:"success"`
	Points  struct {
		Remaining    int64     `json:"remaining"`
		Used         int64     `json:"used"`
		MonthlyLimit int64     `json:"monthly_limit"`
		NextRenewal  time.Time `json:"next_renewal"`
	} `json:"points"`
	UsageByModel struct {
		Enabled         bool    `json:"enabled"`
		DollarLimit     float64 `json:"dollar_limit"`
		CurrentSpend    float64 `json:"current_spend"`
		RemainingBudget float64 `json:"remaining_budget"`
	} `json:"usage_by_model"`
	APIKey keyUsageJSON `json:"api_key"`
}

// keyUsageJSON is a key's request limits with their current counts: GET /usage's api_key and
// GET /admin/api-keys/{id}/usage's usage.
type keyUsageJSON struct {
	ID          string             `json:"id"`
	Name        string             `json:"name"`
	BillingMode apikey.BillingMode `json:"billing_mode"`
	Daily       windowJSON         `json:"daily"`
	Monthly     windowJSON         `json:"monthly"`
	RateLimit   struct {
		RequestsPerMinute windowJSON `json:"requests_per_minute"`
		RequestsPerHour   windowJSON `json:"requests_per_hour"`
	} `json:"rate_limit"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// windowJSON is one window; a window with no limit shows limit and remaining as null.
type windowJSON struct {
	Limit     apikey.Limit `json:"limit"`
	Used      int          `json:"used"`
	Remaining *int         `json:"remaining"`
	ResetTime time.Time    `json:"reset_time"`
}

// Usage returns the handler of GET /usage: the calling key's points, usage-by-model budget,
// request limits with their current counts, and expiry. Reading it counts no request.
func (h *Handler) Usage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := identity.Key(r.Context())
		if k == nil {
			h.Fail(w, r, fault.New(fault.Unauthenticated, "Invalid API key", "An API key is required"))
			return
		}
		now := h.now()
		u, err := h.Billing.EnsureUser(r.Context(), billing.UserID(k))
		if err != nil {
			h.Fail(w, r, err)
			return
		}
		ku, err := h.keyUsage(r.Context(), k, now)
		if err != nil {
			h.Fail(w, r, err)
			return
		}
		var out usageJSON
		out.Success = true
		out.Points.Remaining, out.Points.Used = u.PointsRemaining(), u.PointsUsed
		out.Points.MonthlyLimit, out.Points.NextRenewal = u.MonthlyPoints, u.NextRenewal()
		ubm := &out.UsageByModel
		ubm.Enabled, ubm.DollarLimit = u.UsageByModel, billing.Dollars(u.DollarLimitMicros)
		ubm.CurrentSpend, ubm.RemainingBudget = billing.Dollars(u.SpendMicros), billing.Dollars(u.BudgetRemainingMicros())
		out.APIKey = ku
		httpapi.WriteJSON(w, http.StatusOK, out)
	})
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// keyUsage reads k's request counts in every window of its limits at now.
func (h *Handler) keyUsage(ctx context.Context, k *apikey.Key, now time.Time) (keyUsageJSON, error) {
	var a keyUsageJSON
	windows, err := h.Limits.Usage(ctx, k, now)
	if err != nil {
		return a, err
	}
	a.ID, a.Name, a.BillingMode, a.ExpiresAt = k.ID, k.Name, k.BillingModeOrDefault(), k.ExpiresAt
	for _, wu := range windows {
		wj := windowJSON{Limit: wu.Limit, Used: wu.Used, ResetTime: wu.ResetTime}
		if n, limited := wu.Remaining(); limited {
			wj.Remaining = &n
		}
		switch wu.Period {
		case limits.Minute:
			a.RateLimit.RequestsPerMinute = wj
		case limits.Hour:
			a.RateLimit.RequestsPerHour = wj
		case limits.Day:
			a.Daily = wj
		case limits.Month:
			a.Monthly = wj
		}
	}
	return a, nil
}

// getKeyUsage serves GET /admin/api-keys/{id}/usage: any key's request counts against its limits
// and when each window resets, as GET /usage shows its caller's own. Reading it counts nothing.
func (h *Handler) getKeyUsage(w http.ResponseWriter, r *http.Request) {
	if h.Limits == nil {
		h.Fail(w, r, fault.New(fault.NotImplemented, "Not implemented", "this deployment keeps no request counts (no limits table)"))
		return
	}
	k, err := h.Service.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	u, err := h.keyUsage(r.Context(), k, h.now())
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Success bool         `json:"success"`
		Usage   keyUsageJSON `json:"usage"`
	}{true, u})
}
