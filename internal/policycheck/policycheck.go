// Package policycheck builds the answer of POST /policy-check (SPEC 6), the dry run of a chat
// request: given what each check of the real pipeline concluded — input, model access, SMLTP
// policy resolution and access, quota, circuit breakers, request limits — it reports every check with passed, and for a failed one
// the status, error and message the real call would have returned. The checks themselves stay in
// their packages and run exactly as on the real path; this package only shapes their results, so
// the dry run cannot drift from the call it predicts.
package policycheck

import (
	"errors"
	"fmt"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/policy"
)

// ErrNotChecked marks a check that did not run because one it depends on failed (no chain to
// check once the input is invalid, for example). It fails the check without a status.
var ErrNotChecked = errors.New("not checked: an earlier check failed")

// StatusFunc turns an error into what the surface would answer: the HTTP status, the envelope's
// error title and message. The lead passes the surface's own mapping, so both agree.
type StatusFunc func(err error) (status int, title, message string)

// Check is one check's result.
type Check struct {
	Passed  bool   `json:"passed"`
	Status  int    `json:"status,omitempty"`
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
}

// ModelAccessCheck is model_access: the key's allowlist and the catalog, for every model.
type ModelAccessCheck struct {
	Check
	Models []string `json:"models"`
}

// PolicyCheck is smltp_policy: which policy applies.
type PolicyCheck struct {
	Check
	Applied *policy.Applied `json:"applied,omitempty"`
}

// PolicyAccessCheck is smltp_policy_access: may the key use the policy, and may every model of
// the chain run under it (monitor-mode breaches pass, listed in verdicts).
type PolicyAccessCheck struct {
	Check
	Verdicts []policy.Verdict `json:"verdicts"`
}

// QuotaCheck is quota: points required (the chain's most expensive model) against remaining.
type QuotaCheck struct {
	Check
	PointsRequired  int  `json:"points_required"`
	PointsRemaining *int `json:"points_remaining"` // nil: the key is not billed in points, or its user has no quota
}

// Checks are the dry run's checks.
type Checks struct {
	Input             Check             `json:"input"`
	ModelAccess       ModelAccessCheck  `json:"model_access"`
	SMLTPPolicy       PolicyCheck       `json:"smltp_policy"`
	SMLTPPolicyAccess PolicyAccessCheck `json:"smltp_policy_access"`
	Quota             QuotaCheck        `json:"quota"`
	// CircuitBreaker: no breaker of the key or its user is open. RateLimit: every request window
	// of the key has room (read only: the dry run is counted in none).
	CircuitBreaker Check `json:"circuit_breaker"`
	RateLimit      Check `json:"rate_limit"`
}

// Plan is what the real call would do.
type Plan struct {
	Models         []string `json:"models"`
	FailoverEngine string   `json:"failover_engine"`
}

// Response is the body of POST /policy-check.
type Response struct {
	Success bool   `json:"success"`
	DryRun  bool   `json:"dry_run"`
	Allowed bool   `json:"allowed"`
	Checks  Checks `json:"checks"`
	Plan    Plan   `json:"plan"`
}

// Name is one check of the answer, by its member of Checks: what a step of the pipeline reports
// under.
type Name int

const (
	Input Name = iota
	ModelAccess
	SMLTPPolicy
	SMLTPPolicyAccess
	Quota
	CircuitBreaker
	RateLimit
)

// Result is where check n's conclusion goes in in.
func (in *Inputs) Result(n Name) *error {
	switch n {
	case Input:
		return &in.Input
	case ModelAccess:
		return &in.ModelAccess
	case SMLTPPolicy:
		return &in.PolicyErr
	case SMLTPPolicyAccess:
		return &in.PolicyAccess
	case Quota:
		return &in.Quota
	case CircuitBreaker:
		return &in.Breaker
	case RateLimit:
		return &in.Limit
	}
	panic(fmt.Sprintf("policycheck: no check %d", n))
}

// Inputs are the checks' conclusions; a nil error is a passed check.
type Inputs struct {
	Input error // body validation and chain resolution

	Models      []string // the resolved chain, in order
	ModelAccess error    // the first model the key or catalog refuses

	Policy    policy.Applied // from policy.Set.Lookup
	PolicyErr error          // an unknown policy

	PolicyAccess error            // the key may not use the policy, or an enforced verdict (CheckChain's error)
	Verdicts     []policy.Verdict // CheckChain's verdicts

	PointsRequired  int  // PointsRequired(models)
	PointsRemaining *int // nil when not billed in points, or without a quota
	Quota           error

	Breaker error // an open breaker of the key or its user
	Limit   error // a full request window of the key

	FailoverEngine string
}

// Build returns the response; Allowed is true only when every check passed.
func Build(in Inputs, status StatusFunc) Response {
	check := func(err error) Check {
		if err == nil {
			return Check{Passed: true}
		}
		if errors.Is(err, ErrNotChecked) {
			return Check{Message: ErrNotChecked.Error()}
		}
		c := Check{}
		c.Status, c.Error, c.Message = status(err)
		return c
	}
	r := Response{Success: true, DryRun: true}
	r.Checks.Input = check(in.Input)
	r.Checks.ModelAccess = ModelAccessCheck{Check: check(in.ModelAccess), Models: nonNil(in.Models)}
	r.Checks.SMLTPPolicy = PolicyCheck{Check: check(in.PolicyErr)}
	if in.PolicyErr == nil {
		applied := in.Policy
		r.Checks.SMLTPPolicy.Applied = &applied
	}
	verdicts := in.Verdicts
	if verdicts == nil {
		verdicts = []policy.Verdict{}
	}
	r.Checks.SMLTPPolicyAccess = PolicyAccessCheck{Check: check(in.PolicyAccess), Verdicts: verdicts}
	r.Checks.Quota = QuotaCheck{Check: check(in.Quota), PointsRequired: in.PointsRequired, PointsRemaining: in.PointsRemaining}
	r.Checks.CircuitBreaker = check(in.Breaker)
	r.Checks.RateLimit = check(in.Limit)
	r.Plan = Plan{Models: nonNil(in.Models), FailoverEngine: in.FailoverEngine}
	r.Allowed = r.Checks.Input.Passed && r.Checks.ModelAccess.Passed && r.Checks.SMLTPPolicy.Passed &&
		r.Checks.SMLTPPolicyAccess.Passed && r.Checks.Quota.Passed && r.Checks.CircuitBreaker.Passed && r.Checks.RateLimit.Passed
	return r
}

// PointsRequired is the points the quota check asks for: those of the chain's most expensive
// model, since any of them may be the one that serves.
func PointsRequired(models []*catalog.Model) int {
	n := 0
	for _, m := range models {
		n = max(n, m.Points)
	}
	return n
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
