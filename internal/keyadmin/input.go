package keyadmin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/printable"
)

// Opt is a field of a partial update: absent (Set false), null (Null true: clear it — back to its
// default, or for a request limit no limit), or a value.
type Opt[T any] struct {
	Set, Null bool
	V         T
}

// Some is a set value, for callers building a KeyInput in code (cmd/admin).
func Some[T any](v T) Opt[T] { return Opt[T]{Set: true, V: v} }

// UnmarshalJSON implements json.Unmarshaler; unknown fields inside a value are refused, as in
// the body around it.
func (o *Opt[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Null = true
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(&o.V)
}

// KeyInput is the body of a create (POST) or an update (PUT or PATCH, both partial) of a key:
// every field of SPEC 7. A null clears a field back to its default; a null limit (dailyLimit,
// monthlyLimit, rateLimit or one of its fields) lifts it: no limit.
type KeyInput struct {
	Name                 Opt[string]             `json:"name"`
	UserID               Opt[string]             `json:"userId"`
	Admin                Opt[bool]               `json:"admin"`
	BillingMode          Opt[apikey.BillingMode] `json:"billingMode"`
	DailyLimit           Opt[int]                `json:"dailyLimit"`
	MonthlyLimit         Opt[int]                `json:"monthlyLimit"`
	RateLimit            Opt[RateLimitInput]     `json:"rateLimit"`
	ExpiresAt            Opt[time.Time]          `json:"expiresAt"`
	AllowedModels        Opt[[]string]           `json:"allowedModels"`
	AllowedSMLTPPolicies Opt[[]string]           `json:"allowedSMLTPPolicies"`
	FailoverDefaults     Opt[chain.Defaults]     `json:"failoverDefaults"`
	// AllowHedging false forbids hedge_after_ms for the key; null: back to the default, allowed.
	AllowHedging Opt[bool] `json:"allowHedging"`
}

// RateLimitInput is the rateLimit object of a KeyInput.
type RateLimitInput struct {
	RequestsPerMinute Opt[int] `json:"requestsPerMinute"`
	RequestsPerHour   Opt[int] `json:"requestsPerHour"`
}

const (
	maxNameLen = 200
	// maxCount bounds day and month limits: any real allowance, far from overflow.
	maxCount = 1_000_000_000
	// maxExpiryYear is the last year of RFC 3339 (and of JSON times) in UTC.
	maxExpiryYear = 9999
)

var userIDPattern = regexp.MustCompile(`^[A-Za-z0-9._@:+-]{1,128}$`)

// validUserID reports whether id may name a user: 1 to 128 letters, digits or . _ @ : + -, and
// not a path segment of its own (. or ..), which a URL path or a log could not tell from one.
func validUserID(id string) bool {
	return userIDPattern.MatchString(id) && id != "." && id != ".."
}

// validated is a KeyInput checked against the catalog, with failoverDefaults clamped.
type validated struct {
	in       KeyInput
	defaults *chain.Defaults
}

// validate checks every set field and names the first wrong one in a fault.Invalid.
func (s *Service) validate(in KeyInput, now time.Time) (validated, error) {
	v := validated{in: in}
	if in.Name.Set && (in.Name.Null || in.Name.V == "" || len(in.Name.V) > maxNameLen) {
		return v, fault.Invalid("name", fmt.Sprintf("name must be 1 to %d characters", maxNameLen))
	}
	if in.Name.Set && !printable.Text(in.Name.V) {
		return v, fault.Invalid("name", "name must be printable text: no control characters, NUL or bidirectional overrides")
	}
	if in.Admin.Set && in.Admin.Null {
		return v, fault.Invalid("admin", "admin must be true or false")
	}
	if in.UserID.Set && !in.UserID.Null && !validUserID(in.UserID.V) {
		return v, fault.Invalid("userId", "userId must be 1 to 128 letters, digits or . _ @ : + -, and not . or ..")
	}
	if in.BillingMode.Set && !in.BillingMode.Null && !in.BillingMode.V.Valid() {
		return v, fault.Invalid("billingMode", fmt.Sprintf("billingMode must be %q or %q", apikey.UserCompletions, apikey.UsageByModel))
	}
	if err := checkCount("dailyLimit", in.DailyLimit, maxCount); err != nil {
		return v, err
	}
	if err := checkCount("monthlyLimit", in.MonthlyLimit, maxCount); err != nil {
		return v, err
	}
	if rl := in.RateLimit; rl.Set && !rl.Null {
		if err := checkCount("rateLimit.requestsPerMinute", rl.V.RequestsPerMinute, apikey.MaxPerMinute); err != nil {
			return v, err
		}
		if err := checkCount("rateLimit.requestsPerHour", rl.V.RequestsPerHour, apikey.MaxPerHour); err != nil {
			return v, err
		}
	}
	if in.ExpiresAt.Set && !in.ExpiresAt.Null && !in.ExpiresAt.V.After(now) {
		return v, fault.Invalid("expiresAt", "expiresAt must be in the future (revoke a key to stop it now)")
	}
	// A key's expiry is kept and shown in UTC, where RFC 3339 stops at year 9999: an offset can
	// carry 9999-12-31T23:59:59-01:00 past it.
	if in.ExpiresAt.Set && !in.ExpiresAt.Null && in.ExpiresAt.V.UTC().Year() > maxExpiryYear {
		return v, fault.Invalid("expiresAt", fmt.Sprintf("expiresAt must be no later than %d-12-31T23:59:59Z (send null for a key that does not expire)", maxExpiryYear))
	}
	// An empty list would read as "none" to one reader and "every" to another: SPEC 7 refuses it.
	if in.AllowedModels.Set && !in.AllowedModels.Null && len(in.AllowedModels.V) == 0 {
		return v, fault.Invalid("allowedModels", "allowedModels is empty: list the models the key may use, or send null to allow every model")
	}
	if p := in.AllowedSMLTPPolicies; p.Set && !p.Null && len(p.V) == 0 {
		return v, fault.Invalid("allowedSMLTPPolicies", "allowedSMLTPPolicies is empty: list the policies the key may use, or send null for the defaults (public, internal)")
	}
	if in.AllowedModels.Set && !in.AllowedModels.Null {
		for i, m := range in.AllowedModels.V {
			if !s.modelExists(m) {
				return v, fault.Invalid(fmt.Sprintf("allowedModels[%d]", i), fmt.Sprintf("unknown model %q", m))
			}
		}
	}
	if p := in.AllowedSMLTPPolicies; p.Set && !p.Null {
		for i, name := range p.V {
			if name == "" || (s.PolicyExists != nil && !s.PolicyExists(name)) {
				return v, fault.Invalid(fmt.Sprintf("allowedSMLTPPolicies[%d]", i), fmt.Sprintf("unknown SMLTP policy %q", name))
			}
		}
	}
	if fd := in.FailoverDefaults; fd.Set && !fd.Null {
		d, err := chain.NormalizeDefaults(fd.V)
		var ie *chain.InputError
		if errors.As(err, &ie) {
			return v, fault.Invalid(ie.Field, ie.Message)
		}
		if err != nil {
			return v, err
		}
		for i, m := range d.Models {
			if !s.modelExists(m) {
				return v, fault.Invalid(fmt.Sprintf("failoverDefaults.models[%d]", i), fmt.Sprintf("unknown model %q", m))
			}
		}
		v.defaults = &d
	}
	return v, nil
}

func checkCount(field string, o Opt[int], hi int) error {
	if o.Set && !o.Null && (o.V < 1 || o.V > hi) {
		return fault.Invalid(field, fmt.Sprintf("%s must be from 1 to %d (got %d)", field, hi, o.V))
	}
	return nil
}

// apply writes the validated fields into k. It may run more than once on fresh copies (a store's
// optimistic retry), so it only sets fields. It refuses defaults naming models the key may not
// use, since that depends on the key's final allowlist.
func (v validated) apply(k *apikey.Key) error {
	in := v.in
	set := func(o Opt[int], dst *apikey.Limit) {
		switch {
		case o.Null:
			*dst = apikey.NoLimit
		case o.Set:
			*dst = apikey.Limit(o.V)
		}
	}
	if in.Name.Set {
		k.Name = in.Name.V
	}
	if in.UserID.Set {
		k.UserID = in.UserID.V
	}
	if in.Admin.Set {
		k.Admin = in.Admin.V
	}
	if in.BillingMode.Set {
		k.BillingMode = in.BillingMode.V
	}
	set(in.DailyLimit, &k.DailyLimit)
	set(in.MonthlyLimit, &k.MonthlyLimit)
	if in.RateLimit.Set {
		if in.RateLimit.Null {
			k.RateLimit = apikey.RateLimit{RequestsPerMinute: apikey.NoLimit, RequestsPerHour: apikey.NoLimit}
		}
		set(in.RateLimit.V.RequestsPerMinute, &k.RateLimit.RequestsPerMinute)
		set(in.RateLimit.V.RequestsPerHour, &k.RateLimit.RequestsPerHour)
	}
	if in.ExpiresAt.Set {
		k.ExpiresAt = nil
		if !in.ExpiresAt.Null {
			t := in.ExpiresAt.V.UTC()
			k.ExpiresAt = &t
		}
	}
	if in.AllowedModels.Set {
		k.AllowedModels = distinct(in.AllowedModels.V)
	}
	if in.AllowedSMLTPPolicies.Set {
		k.AllowedSMLTPPolicies = distinct(in.AllowedSMLTPPolicies.V)
	}
	if in.FailoverDefaults.Set {
		k.FailoverDefaults = nil
		if v.defaults != nil {
			d := *v.defaults
			k.FailoverDefaults = &d
		}
	}
	if in.AllowHedging.Set {
		k.AllowHedging = nil // null: the default, allowed
		if !in.AllowHedging.Null {
			b := in.AllowHedging.V
			k.AllowHedging = &b
		}
	}
	if d := k.FailoverDefaults; d != nil && d.HedgeAfterMS > 0 && !k.HedgingAllowed() {
		// Judged on the key as it will be: either field may be the one this request changes.
		if in.FailoverDefaults.Set {
			return fault.Invalid("failoverDefaults.hedge_after_ms", "failoverDefaults.hedge_after_ms: this key may not hedge (allowHedging is false): leave hedge_after_ms out, or allow hedging")
		}
		return fault.Invalid("allowHedging", "allowHedging cannot be false while the key's failoverDefaults hedge (hedge_after_ms): send failoverDefaults without hedge_after_ms in the same request")
	}
	if d := k.FailoverDefaults; d != nil {
		for i, m := range d.Models {
			if !k.Allows(m) {
				return fault.Invalid(fmt.Sprintf("failoverDefaults.models[%d]", i), fmt.Sprintf("model %q is not in the key's allowedModels", m))
			}
		}
	}
	return nil
}

// distinct keeps the first of each name, in order; an empty list is stored as unset.
func distinct(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
