package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/fault"
)

// The rules a model can breach, as named in verdicts and errors.
const (
	RuleProvider = "allowed_providers"
	RuleRegion   = "allowed_regions"
)

// Verdict is a policy's answer for one model.
type Verdict struct {
	Model string `json:"model"`
	// Provider names the deployment judged, for a model served by several.
	Provider string `json:"provider,omitempty"`
	Allowed  bool   `json:"allowed"`
	Rule     string `json:"rule,omitempty"`    // the rule breached; "" when allowed
	Message  string `json:"message,omitempty"` // names the model, the policy and the rule
	// Enforced is true when the breach refuses the attempt (enforce mode); a monitor-mode breach
	// has Allowed false and Enforced false: the attempt goes ahead and the violation is recorded.
	Enforced bool `json:"enforced,omitempty"`
}

// Evaluate says whether m may run under the policy.
func (a Applied) Evaluate(m *catalog.Model) Verdict {
	v := Verdict{Model: m.Name, Provider: m.Deployment(), Allowed: true}
	name := m.Name
	if v.Provider != "" {
		name += " on " + v.Provider
	}
	switch {
	case !a.providerAllowed(m.Provider):
		v.Rule = RuleProvider
		v.Message = fmt.Sprintf("model %s is not allowed by SMLTP policy %q (%s): rule %s: provider %q is not one of [%s]",
			name, a.Name, a.Mode, RuleProvider, m.Provider, strings.Join(a.rules.Providers, ", "))
	case !a.regionsAllowed(m.Regions):
		v.Rule = RuleRegion
		v.Message = fmt.Sprintf("model %s is not allowed by SMLTP policy %q (%s): rule %s: it runs in [%s], allowed are [%s]",
			name, a.Name, a.Mode, RuleRegion, strings.Join(m.Regions, ", "), strings.Join(a.rules.Regions, ", "))
	default:
		return v
	}
	v.Allowed, v.Enforced = false, a.Mode == Enforce
	return v
}

// Err is the error an enforced breach returns: 403 "Access denied" naming the model and the rule,
// code "smltp_policy_denied". It is nil for an allowed model and for a monitor-mode breach.
func (v Verdict) Err() error {
	if !v.Enforced {
		return nil
	}
	return fault.New(fault.Forbidden, "Access denied", v.Message).WithCode("smltp_policy_denied")
}

// CheckChain evaluates every model of a chain before the first attempt. It returns every verdict
// (monitor-mode breaches included, for the receipt and the breaker) and, when any model is
// refused in enforce mode, the error of the first such model: the whole chain is refused.
func (a Applied) CheckChain(models []*catalog.Model) ([]Verdict, error) {
	out := make([]Verdict, len(models))
	var first error
	for i, m := range models {
		out[i] = a.Evaluate(m)
		if err := out[i].Err(); err != nil && first == nil {
			first = err
		}
	}
	return out, first
}

func (a Applied) providerAllowed(provider string) bool {
	allowed := a.rules.Providers
	return allowed[0] == Any || slices.Contains(allowed, provider)
}

func (a Applied) regionsAllowed(regions []string) bool {
	allowed := a.rules.Regions
	if allowed[0] == Any {
		return true
	}
	if len(regions) == 0 {
		return false
	}
	for _, r := range regions {
		if !slices.ContainsFunc(allowed, func(p string) bool { return r == p || strings.HasPrefix(r, p+"-") }) {
			return false
		}
	}
	return true
}
