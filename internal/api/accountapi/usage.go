package accountapi

import (
	"context"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/limits"
)

// usageJSON is GET /usage (SPEC 7), in the snake_case of the completion surfaces.
type usageJSON struct {
	Success bool `json:"success"`
	Points  struct {
		Remaining    *int64    `json:"remaining"` // null: no quota
		Used         int64     `json:"used"`
		MonthlyLimit *int64    `json:"monthly_limit"` // null: no quota
		NextRenewal  time.Time `json:"next_renewal"`
	} `json:"points"`
	UsageByModel struct {
		Enabled         bool    `json:"enabled"`
		DollarLimit     float64 `json:"dollar_limit"`
		CurrentSpend    float64 `json:"current_spend"`
		RemainingBudget float64 `json:"remaining_budget"`
	} `json:"usage_by_model"`
	APIKey KeyUsage `json:"api_key"`
}

// KeyUsage is a key's request limits with their current counts: GET /usage's api_key and
// GET /admin/api-keys/{id}/usage's usage.
type KeyUsage struct {
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

// Usage serves GET /usage: the calling key's points, usage-by-model budget, request limits with
// their current counts, and expiry. Reading it counts no request.
type Usage struct {
	Limits  *limits.Limiter
	Billing *billing.Biller
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Routes is the table of the usage route.
func (h *Usage) Routes() []httpapi.Route {
	return []httpapi.Route{{Pattern: "GET /usage", Handle: h.get}}
}

func (h *Usage) get(w http.ResponseWriter, r *http.Request) error {
	k := identity.Key(r.Context())
	if k == nil {
		return fault.New(fault.Unauthenticated, "Invalid API key", "An API key is required")
	}
	now := time.Now()
	if h.Now != nil {
		now = h.Now()
	}
	u, err := h.Billing.EnsureUser(r.Context(), billing.UserID(k))
	if err != nil {
		return err
	}
	ku, err := ReadKeyUsage(r.Context(), h.Limits, k, now)
	if err != nil {
		return err
	}
	var out usageJSON
	out.Success = true
	out.Points.MonthlyLimit, out.Points.Remaining = u.Quota()
	out.Points.Used, out.Points.NextRenewal = u.PointsUsed, u.NextRenewal()
	ubm := &out.UsageByModel
	ubm.Enabled, ubm.DollarLimit = u.UsageByModel, billing.Dollars(u.DollarLimitMicros)
	ubm.CurrentSpend, ubm.RemainingBudget = billing.Dollars(u.SpendMicros), billing.Dollars(u.BudgetRemainingMicros())
	out.APIKey = ku
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// ReadKeyUsage reads k's request counts in every window of its limits at now.
func ReadKeyUsage(ctx context.Context, l *limits.Limiter, k *apikey.Key, now time.Time) (KeyUsage, error) {
	var a KeyUsage
	windows, err := l.Usage(ctx, k, now)
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
