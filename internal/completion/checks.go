package completion

import (
	"context"
	"slices"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/policy"
	"github.com/secureai-gateway/gateway/internal/policycheck"
)

// step is one check of the ordered list every call passes before its first attempt (steps).
// The real call runs the list in order and stops at the first refusal; the dry run (DryRun, POST
// /policy-check) walks the same list read-only and reports every conclusion, so it cannot drift
// from the call it predicts.
type step struct {
	// check is the member of the dry run's answer the step reports under; steps sharing one
	// report the first refusal among them.
	check policycheck.Name
	// needs are the steps (bits of their index in steps) that must have passed for this one to be
	// judged: a dry run reports it not checked otherwise. (The real call stops at its first
	// refusal, so it never reaches a step whose need failed.)
	needs uint
	// admission marks the steps run just before the first attempt (Complete, Stream) rather than
	// by Open, so an idempotent replay, which runs no attempt, is neither counted nor charged.
	admission bool
	// run judges the call. dry is nil on the real call; in a dry run it is the answer, and run
	// only reads — it counts, reserves and records nothing — and adds to dry what it found.
	run func(c *Call, ctx context.Context, dry *policycheck.Inputs) error
}

// The steps, in the order the real call runs them.
const (
	stepCaller       = iota // the request has a key, which may act for its user_id
	stepChain               // the chain resolves from the request and the key's defaults
	stepModels              // every model exists, can be called and is allowed for the key
	stepPolicy              // the SMLTP policy exists
	stepPolicyAccess        // the key may use it
	stepBreaker             // no circuit breaker of the key or its user is open
	stepVerdicts            // the policy lets every model of the chain run
	stepLimits              // every request window of the key has room
	stepQuota               // the key can pay for the chain's dearest model
	numSteps
)

var steps = [numSteps]step{
	stepCaller:       {check: policycheck.Input, run: (*Call).checkCaller},
	stepChain:        {check: policycheck.Input, needs: 1 << stepCaller, run: (*Call).resolveChain},
	stepModels:       {check: policycheck.ModelAccess, needs: 1 << stepChain, run: (*Call).checkModels},
	stepPolicy:       {check: policycheck.SMLTPPolicy, run: (*Call).lookupPolicy},
	stepPolicyAccess: {check: policycheck.SMLTPPolicyAccess, needs: 1<<stepModels | 1<<stepPolicy, run: (*Call).checkPolicyAccess},
	stepBreaker:      {check: policycheck.CircuitBreaker, needs: 1 << stepModels, run: (*Call).checkBreaker},
	stepVerdicts:     {check: policycheck.SMLTPPolicyAccess, needs: 1 << stepPolicyAccess, run: (*Call).judgeChain},
	stepLimits:       {check: policycheck.RateLimit, needs: 1 << stepModels, admission: true, run: (*Call).checkLimits},
	stepQuota:        {check: policycheck.Quota, needs: 1 << stepModels, admission: true, run: (*Call).admit},
}

// runSteps runs, in order, the steps of Open (admission false) or those just before the first
// attempt (admission true), and returns the first refusal.
func (c *Call) runSteps(ctx context.Context, admission bool) error {
	for i := range steps {
		if st := &steps[i]; st.admission == admission {
			if err := st.run(c, ctx, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// dryRun walks every step read-only, each whose needs passed, and puts each conclusion in out
// under its step's check: the first refusal of the check's steps, ErrNotChecked for a step whose
// need failed. invalid is the surface's verdict on the body: when the body is wrong, the caller
// step reports it and nothing that needs the caller is judged.
func (c *Call) dryRun(ctx context.Context, out *policycheck.Inputs, invalid error) {
	var failed uint
	for i := range steps {
		st := &steps[i]
		err := policycheck.ErrNotChecked
		switch {
		case i == stepCaller && invalid != nil:
			err = invalid
		case failed&st.needs == 0:
			err = st.run(c, ctx, out)
		}
		if err == nil {
			continue
		}
		failed |= 1 << i
		if r := out.Result(st.check); *r == nil {
			*r = err
		}
	}
}

func (c *Call) checkCaller(_ context.Context, _ *policycheck.Inputs) error {
	if c.key == nil {
		return fault.New(fault.Unauthenticated, "Invalid API key", "no API key").WithCode("invalid_api_key")
	}
	if !c.key.MayActFor(c.Input.UserID) {
		return fault.New(fault.Forbidden, "Access denied", "user_id: only an admin API key may act on behalf of another user").
			WithCode("on_behalf_of_denied").WithParam("user_id")
	}
	return nil
}

// resolveChain builds the call's plan from the request's chain fields (a model alias standing for
// its chain) and the key's defaults:
// an error is a chain that cannot be built (no model, too many), or a hedge the request asks for
// on a key an admin forbade hedging (403); an alias's hedging is left out for such a key.
func (c *Call) resolveChain(_ context.Context, dry *policycheck.Inputs) error {
	spec := c.Input.Chain
	if a := c.svc.Aliases[spec.Model]; a != nil && spec.Models == nil && spec.Fallbacks == nil {
		spec = a.Expand(spec)
	}
	var err error
	if c.Plan, err = chain.Resolve(spec, c.key.FailoverDefaults, c.svc.Settings); err != nil {
		return err
	}
	if c.Plan.HedgeAfter > 0 && !c.key.HedgingAllowed() {
		if c.Input.Chain.Redundancy.HedgeAfterMS > 0 {
			return fault.New(fault.Forbidden, "Access denied", "redundancy.hedge_after_ms: this API key may not hedge "+
				"(an admin set allowHedging: false); send the request without hedge_after_ms").WithCode("hedging_not_allowed").WithParam("redundancy.hedge_after_ms")
		}
		c.Plan.HedgeAfter = 0 // a model alias's hedging: the key's attempts run one at a time
	}
	if dry != nil {
		dry.Models = c.Plan.Models()
	}
	return nil
}

// checkModels checks every model of the plan and keeps each target's route (Service.checkModels).
func (c *Call) checkModels(_ context.Context, _ *policycheck.Inputs) error {
	var err error
	if c.Plan, c.routes, err = c.svc.checkModels(c.key, c.Plan); err != nil {
		return err
	}
	c.models = modelsOf(c.routes)
	return nil
}

// lookupPolicy finds the policy the request names (or the default), whoever may use it.
func (c *Call) lookupPolicy(_ context.Context, dry *policycheck.Inputs) error {
	var err error
	c.Policy, err = c.svc.policies().Lookup(c.Input.Policy)
	if dry != nil {
		dry.Policy = c.Policy
	}
	return err
}

// checkPolicyAccess refuses the policy lookupPolicy found when the key may not use it (its own
// list, empty for the defaults: no copy of it on the request's path).
func (c *Call) checkPolicyAccess(_ context.Context, _ *policycheck.Inputs) error {
	err := policy.Allow(c.Policy, c.key.AllowedSMLTPPolicies)
	if err != nil {
		c.Policy = policy.Applied{} // a refused call ran under no policy
	}
	return err
}

// checkBreaker refuses a contained key or user. The real call first starts admission's read and
// the read of what other instances report of the chain's models (skip_unhealthy), so both run
// beside the checks and the admission from here on and have landed by the first attempt.
func (c *Call) checkBreaker(ctx context.Context, dry *policycheck.Inputs) error {
	ctl := &c.svc.Controls
	if dry == nil && ctl.Ledger != nil {
		ctl.Ledger.Prefetch(ctx, c.key)
	}
	if dry == nil {
		c.svc.Engine.Health.Prefetch(ctx, c.Plan)
	}
	if ctl.Breakers == nil {
		return nil
	}
	return ctl.Breakers.Check(ctx, c.key)
}

// judgeChain judges every model of the chain by the policy: an enforced denial refuses the whole
// chain, nothing sent. A breach counts toward opening the key's breaker — on the real call only.
func (c *Call) judgeChain(ctx context.Context, dry *policycheck.Inputs) error {
	c.verdicts, _ = c.Policy.CheckChain(c.models)
	err := denyDeployments(c.Plan, c.verdicts)
	if dry != nil {
		dry.Verdicts = c.verdicts
	} else if b := c.svc.Controls.Breakers; b != nil && c.violated() {
		_ = b.RecordViolation(ctx, c.key) // best effort: the refusal stands regardless
	}
	return err
}

// violated reports whether the call breaches its policy: a model refused, or one that will run
// in monitor mode against it. A deployment passed over for the policy is the catalog's routing,
// not the caller's breach.
func (c *Call) violated() bool {
	for i, v := range c.verdicts {
		if !v.Allowed && c.Plan.Targets[i].Skip != chain.PolicyDenied {
			return true
		}
	}
	return false
}

// denyDeployments passes over each deployment the policy refuses (enforce mode) while another
// deployment of its model is allowed: it is reported skipped (policy_denied) and never called. A
// model all of whose deployments are refused refuses the whole chain, as a model served by one
// provider does; the error is the first such refusal. verdicts are plan's targets', in order.
func denyDeployments(plan chain.Plan, verdicts []policy.Verdict) error {
	var first error
	for i := 0; i < len(plan.Targets); {
		j := i + 1 // a model's targets are adjacent: i … j-1
		for j < len(plan.Targets) && plan.Targets[j].Model == plan.Targets[i].Model {
			j++
		}
		allowed := slices.ContainsFunc(verdicts[i:j], func(v policy.Verdict) bool { return v.Err() == nil })
		for k := i; k < j; k++ {
			switch err := verdicts[k].Err(); {
			case err == nil:
			case allowed:
				plan.Targets[k].Skip = chain.PolicyDenied
			case first == nil:
				first = err
			}
		}
		i = j
	}
	return first
}

// checkLimits reports, in a dry run, whether a request window of the key is full. The real call
// counts the request in its windows in the quota step, in one write with the reservation
// (Ledger.Admit), so that a request is counted only if it can also pay.
func (c *Call) checkLimits(ctx context.Context, dry *policycheck.Inputs) error {
	if dry == nil || c.svc.Controls.Counts == nil {
		return nil
	}
	return c.svc.Controls.Counts.Full(ctx, c.key, time.Now())
}

// admit, last before the first attempt so nothing refused earlier is counted, counts the request
// in its key's windows and holds what the chain's dearest model would cost, together or not at
// all: a key over its limits is refused as such, one that cannot pay as a deliberate block, never
// a failover. A dry run asks only for a quote.
func (c *Call) admit(ctx context.Context, dry *policycheck.Inputs) error {
	ctl := &c.svc.Controls
	if dry != nil {
		return c.quote(ctx, dry)
	}
	if ctl.Ledger == nil {
		return nil
	}
	r, err := ctl.Ledger.Admit(ctx, c.key, c.models, c.estimate(), time.Now())
	c.reservation = r
	return err
}

// quote is the dry run's quota: the points the chain asks for, and whether the key has them.
func (c *Call) quote(ctx context.Context, dry *policycheck.Inputs) error {
	dry.PointsRequired = policycheck.PointsRequired(c.models)
	b := c.svc.Controls.Billing
	if b == nil {
		return nil
	}
	q, err := b.Quote(ctx, c.key, c.models, c.estimate())
	if q.User != nil && q.Mode == apikey.UserCompletions && !q.BillingFallback && q.User.HasQuota() {
		left := int(q.User.PointsRemaining())
		dry.PointsRemaining = &left
	}
	return err
}
