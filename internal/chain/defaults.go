package chain

import (
	"fmt"
	"time"

	"github.com/tidwall/gjson"
)

// Defaults is an API key's admin-set failover configuration (`failoverDefaults`).
type Defaults struct {
	Models              []string `json:"models"`
	TimeoutMS           int      `json:"timeout_ms,omitempty"`
	FirstTokenTimeoutMS int      `json:"first_token_timeout_ms,omitempty"`
	On                  []Reason `json:"on"` // nil: not set; empty: never fail over
	// The opt-in extensions (SPEC 3.5a); nil or "" when not set.
	Retry         *RetryOptions `json:"retry,omitempty"`
	OnInterrupt   Interrupt     `json:"on_interrupt,omitempty"`
	SkipUnhealthy *bool         `json:"skip_unhealthy,omitempty"`
	HedgeAfterMS  int           `json:"hedge_after_ms,omitempty"`
}

// Settings are the project-wide values used when neither the request nor the key sets one.
type Settings struct {
	Timeout           time.Duration
	FirstTokenTimeout time.Duration
	// SkipUnhealthy is the deployment's default for skip_unhealthy.
	SkipUnhealthy bool
}

// ProjectSettings are the documented defaults: long enough for a large non-streamed completion,
// short enough that a stream whose provider hangs fails over while the caller still waits.
var ProjectSettings = Settings{Timeout: 60 * time.Second, FirstTokenTimeout: 15 * time.Second}

// NormalizeDefaults validates an admin's failoverDefaults payload: model names must be non-empty
// and at most three distinct ones (duplicates collapse), triggers must be known, and timeouts are
// clamped into their ranges rather than rejected.
func NormalizeDefaults(d Defaults) (Defaults, error) {
	out := Defaults{Models: distinct(d.Models, func(m string) string { return m })}
	for i, m := range out.Models {
		if m == "" {
			return Defaults{}, &InputError{Field: fmt.Sprintf("failoverDefaults.models[%d]", i), Message: "model name must not be empty"}
		}
	}
	if len(out.Models) > MaxModels {
		return Defaults{}, &InputError{Field: "failoverDefaults.models", Message: fmt.Sprintf("at most %d distinct models (got %d)", MaxModels, len(out.Models))}
	}
	if d.TimeoutMS != 0 {
		out.TimeoutMS = clamp(d.TimeoutMS, MinTimeoutMS, MaxTimeoutMS)
	}
	if d.FirstTokenTimeoutMS != 0 {
		out.FirstTokenTimeoutMS = clamp(d.FirstTokenTimeoutMS, MinFirstTokenTimeoutMS, MaxFirstTokenTimeoutMS)
	}
	if d.On != nil {
		names := make([]string, len(d.On))
		for i, r := range d.On {
			names[i] = string(r)
		}
		t, err := ParseTriggers("failoverDefaults.on", names)
		if err != nil {
			return Defaults{}, err
		}
		out.On = t.List()
	}
	out.Retry = normalizeRetry(d.Retry)
	if d.OnInterrupt != "" {
		if _, err := parseInterrupt("failoverDefaults.on_interrupt", gjson.Result{Type: gjson.String, Str: string(d.OnInterrupt)}); err != nil {
			return Defaults{}, err
		}
		out.OnInterrupt = d.OnInterrupt
	}
	out.SkipUnhealthy = d.SkipUnhealthy
	if d.HedgeAfterMS != 0 {
		out.HedgeAfterMS = clamp(d.HedgeAfterMS, MinHedgeAfterMS, MaxHedgeAfterMS)
	}
	if out.HedgeAfterMS != 0 && out.Retry != nil && out.Retry.Attempts > 0 {
		return Defaults{}, errHedgeWithRetry("failoverDefaults.hedge_after_ms")
	}
	return out, nil
}

func clamp(v, lo, hi int) int { return max(lo, min(hi, v)) }

// distinct keeps the first occurrence of each key, in order.
func distinct[T any](items []T, key func(T) string) []T {
	out := make([]T, 0, len(items))
	seen := make(map[string]struct{}, len(items))
	for _, it := range items {
		k := key(it)
		if _, dup := seen[k]; !dup {
			seen[k] = struct{}{}
			out = append(out, it)
		}
	}
	return out
}

// Expand is the Spec of a request whose model is an alias standing for d (SPEC 12): d's models
// become the chain, and d's options are the request's own except where the request set one.
func (d *Defaults) Expand(s Spec) Spec {
	s.Models = make([]Entry, len(d.Models))
	for i, m := range d.Models {
		s.Models[i] = Entry{Model: m}
	}
	r := s.Redundancy
	s.Redundancy = Options{TimeoutMS: d.TimeoutMS, FirstTokenTimeoutMS: d.FirstTokenTimeoutMS, On: d.On, Retry: d.Retry,
		OnInterrupt: d.OnInterrupt, SkipUnhealthy: d.SkipUnhealthy, HedgeAfterMS: d.HedgeAfterMS}
	if r.TimeoutMS != 0 {
		s.Redundancy.TimeoutMS = r.TimeoutMS
	}
	if r.FirstTokenTimeoutMS != 0 {
		s.Redundancy.FirstTokenTimeoutMS = r.FirstTokenTimeoutMS
	}
	if r.On != nil {
		s.Redundancy.On = r.On
	}
	if r.Retry != nil {
		s.Redundancy.Retry = r.Retry
	}
	if r.OnInterrupt != "" {
		s.Redundancy.OnInterrupt = r.OnInterrupt
	}
	if r.SkipUnhealthy != nil {
		s.Redundancy.SkipUnhealthy = r.SkipUnhealthy
	}
	if r.HedgeAfterMS != 0 {
		s.Redundancy.HedgeAfterMS = r.HedgeAfterMS
	}
	return s
}
