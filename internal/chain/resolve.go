package chain

import (
	"fmt"
	"time"
)

// Source says which rule of the precedence order produced a chain.
type Source string

const (
	FromModels      Source = "models"
	FromFallbacks   Source = "fallback_models"
	FromKeyDefaults Source = "key_defaults"
	FromSingleModel Source = "model"
)

// Target is one resolved attempt: a model and its timeouts.
type Target struct {
	Model             string
	Timeout           time.Duration
	FirstTokenTimeout time.Duration
	// ContextWindow is the model's catalog context window (0: unknown); a context_length
	// failover goes only to a larger one.
	ContextWindow int
	// Provider names the deployment this target sends to when its model has several (SPEC
	// 3.5a); "" for a model served by one provider, whose report lines then name none.
	Provider string
	// Skip, when set, is why the target is passed over without an attempt, decided before the
	// chain runs (a deployment the request's policy forbids): it is reported skipped.
	Skip Reason
}

// line is t's report line with status and reason.
func (t Target) line(s Status, r Reason) Attempt {
	return Attempt{Model: t.Model, Provider: t.Provider, Status: s, Reason: r}
}

// healthKey is what t's failures are counted under, here and in the other processes' reports:
// its deployment ("<model> <provider>": a model's name never holds a space), or its model.
func (t Target) healthKey() string {
	if t.Provider == "" {
		return t.Model
	}
	return t.Model + " " + t.Provider
}

// Plan is a resolved chain.
type Plan struct {
	Targets       []Target
	On            Triggers
	Source        Source
	Retry         Retry
	OnInterrupt   Interrupt
	SkipUnhealthy bool
	// HedgeAfter, when set, starts the next model beside an attempt that has not answered (or,
	// streaming, sent its first content token) after this long; 0: attempts run one at a time.
	HedgeAfter time.Duration
}

// Models lists the chain's model names in order, each once (a model with several deployments
// has a target per deployment).
func (p Plan) Models() []string {
	out := make([]string, 0, len(p.Targets))
	for _, t := range p.Targets {
		if len(out) == 0 || out[len(out)-1] != t.Model {
			out = append(out, t.Model)
		}
	}
	return out
}

// Resolve applies the contract's precedence order: `models`; `model` + `fallback_models`; the
// key's defaults from `model`'s position; otherwise a single attempt. Per-attempt values win over
// the request's redundancy, which wins over the key's defaults, which win over the project's.
// keyDefaults may be nil.
func Resolve(s Spec, keyDefaults *Defaults, project Settings) (Plan, error) {
	var entries []Entry
	var src Source
	switch {
	case s.Models != nil:
		entries, src = s.Models, FromModels
	case s.Model == "":
		return Plan{}, &InputError{Field: "model", Message: "is required (or send models)"}
	case s.Fallbacks != nil:
		entries, src = append([]Entry{{Model: s.Model}}, s.Fallbacks...), FromFallbacks
	default:
		entries, src = []Entry{{Model: s.Model}}, FromSingleModel
		if keyDefaults != nil {
			for i, m := range keyDefaults.Models {
				if m == s.Model {
					entries, src = nil, FromKeyDefaults
					for _, d := range keyDefaults.Models[i:] {
						entries = append(entries, Entry{Model: d})
					}
					break
				}
			}
		}
	}
	// Duplicates collapse before counting; the first occurrence keeps its place and timeouts.
	entries = distinct(entries, func(e Entry) string { return e.Model })
	if len(entries) == 0 {
		// Only a hand-built Spec can get here (ParseSpec rejects `models: []`); an empty plan
		// would make Run panic.
		return Plan{}, &InputError{Field: string(src), Message: "must name at least one model"}
	}
	if len(entries) > MaxModels {
		field := string(src)
		if src == FromFallbacks {
			field = "fallback_models"
		}
		return Plan{}, &InputError{Field: field, Message: fmt.Sprintf("a chain has at most %d distinct models (got %d)", MaxModels, len(entries))}
	}

	base := project
	p := Plan{Targets: make([]Target, len(entries)), On: AllTriggers, Source: src, OnInterrupt: InterruptError, SkipUnhealthy: project.SkipUnhealthy}
	if keyDefaults != nil {
		base = overlay(base, keyDefaults.TimeoutMS, keyDefaults.FirstTokenTimeoutMS)
		p.overlay(keyDefaults.On, keyDefaults.Retry, keyDefaults.OnInterrupt, keyDefaults.SkipUnhealthy)
		p.hedge(keyDefaults.HedgeAfterMS)
	}
	base = overlay(base, s.Redundancy.TimeoutMS, s.Redundancy.FirstTokenTimeoutMS)
	r := s.Redundancy
	p.overlay(r.On, r.Retry, r.OnInterrupt, r.SkipUnhealthy)
	p.hedge(r.HedgeAfterMS)
	if p.HedgeAfter > 0 && p.Retry.Attempts > 0 {
		return Plan{}, hedgeWithRetry(r.HedgeAfterMS > 0, r.Retry != nil)
	}
	for i, e := range entries {
		t := overlay(base, e.TimeoutMS, e.FirstTokenTimeoutMS)
		p.Targets[i] = Target{Model: e.Model, Timeout: t.Timeout, FirstTokenTimeout: t.FirstTokenTimeout}
	}
	return p, nil
}

// overlay sets the chain-wide options that are set (a request's over a key's defaults).
func (p *Plan) overlay(on []Reason, retry *RetryOptions, interrupt Interrupt, skip *bool) {
	if on != nil {
		p.On = triggersOf(on)
	}
	if retry != nil {
		p.Retry = retry.resolve()
	}
	if interrupt != "" {
		p.OnInterrupt = interrupt
	}
	if skip != nil {
		p.SkipUnhealthy = *skip
	}
}

func (p *Plan) hedge(ms int) {
	if ms > 0 {
		p.HedgeAfter = time.Duration(ms) * time.Millisecond
	}
}

// errHedgeWithRetry refuses a chain that would both retry a model and hedge it: a retry waits for
// the same model while a hedge has already moved on, and the two together could run a model's
// retry beside its own earlier attempt.
func errHedgeWithRetry(field string) error {
	return &InputError{Field: field, Message: "cannot be combined with retry (set one of them)"}
}

// hedgeWithRetry is errHedgeWithRetry for a request, naming what it sent and the way out: which of
// the two the request set (hedge, retry) and which came from the key's failoverDefaults (a
// request's own value wins over the key's, so "retry": {"attempts": 0} turns the key's retries off).
func hedgeWithRetry(hedge, retry bool) error {
	const off = `send "retry": {"attempts": 0} in redundancy to hedge without retries`
	switch {
	case hedge && retry:
		return &InputError{Field: "redundancy.hedge_after_ms", Message: "cannot be combined with redundancy.retry: a chain either retries a failed model or hedges a slow one; " + off}
	case hedge:
		return &InputError{Field: "redundancy.hedge_after_ms", Message: "cannot be combined with retry, and this API key's failoverDefaults retry a failed model: " + off}
	case retry: // the key hedges by default and the request asked for retries
		return &InputError{Field: "redundancy.retry", Message: "cannot be combined with hedging, and this API key's failoverDefaults set hedge_after_ms: send the request without retry (or \"attempts\": 0)"}
	default: // both the key's (NormalizeDefaults refuses such defaults)
		return errHedgeWithRetry("failoverDefaults.hedge_after_ms")
	}
}

func overlay(s Settings, timeoutMS, firstTokenMS int) Settings {
	if timeoutMS > 0 {
		s.Timeout = time.Duration(timeoutMS) * time.Millisecond
	}
	if firstTokenMS > 0 {
		s.FirstTokenTimeout = time.Duration(firstTokenMS) * time.Millisecond
	}
	return s
}

func triggersOf(rs []Reason) Triggers {
	var t Triggers
	for _, r := range rs {
		t |= r.bit()
	}
	return t
}
