package completion

import (
	"context"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/policycheck"
)

// FailoverEngine names the attempt loop in a dry run's plan.
const FailoverEngine = "secureai-chain"

// DryRun runs every check Open and the first attempt would run for in — on-behalf-of, the chain,
// each model's access, the SMLTP policy and its access for every model, the quota — through the
// same code, and reports each conclusion (POST /policy-check). It calls no provider, bills
// nothing, reserves nothing and counts against no limit. validation is the surface's own verdict
// on the body (nil when it passed).
func (s *Service) DryRun(ctx context.Context, in Input, validation error) policycheck.Inputs {
	out := policycheck.Inputs{FailoverEngine: FailoverEngine, Input: validation}
	c := &Call{Input: in, svc: s, key: identity.Key(ctx), requestID: identity.RequestID(ctx), servedAttempt: -1}
	skipped := func() {
		out.ModelAccess, out.PolicyAccess, out.Quota = policycheck.ErrNotChecked, policycheck.ErrNotChecked, policycheck.ErrNotChecked
		out.Breaker, out.Limit = policycheck.ErrNotChecked, policycheck.ErrNotChecked
	}
	// Which policy applies, whoever may use it; whether this key may is the access check.
	out.Policy, out.PolicyErr = s.policies().Resolve(in.Policy, s.policies().Names(), "")
	if out.Input != nil {
		skipped()
		return out
	}
	if c.key == nil || !c.key.MayActFor(in.UserID) {
		out.Input = c.prepare() // the on-behalf-of refusal, as Open gives it
		skipped()
		return out
	}
	invalid, denied := c.resolveChain()
	if invalid != nil {
		out.Input = invalid
		skipped()
		return out
	}
	out.Models = c.Plan.Models()
	if denied != nil {
		skipped()
		out.ModelAccess = denied
		return out
	}
	models := c.models
	if b := s.Controls.Breakers; b != nil {
		out.Breaker = b.Check(ctx, c.key) // reads only: a violation is counted by the real call
	}
	if l := s.Controls.Counts; l != nil {
		out.Limit = l.Full(ctx, c.key, time.Now())
	}
	out.PointsRequired = policycheck.PointsRequired(models)
	if out.PolicyErr != nil {
		out.PolicyAccess = policycheck.ErrNotChecked
	} else if _, err := s.policies().Resolve(in.Policy, c.key.SMLTPPolicies(), ""); err != nil {
		out.PolicyAccess = err
	} else {
		out.Verdicts, _ = out.Policy.CheckChain(models)
		out.PolicyAccess = denyDeployments(c.Plan, out.Verdicts)
	}
	if b := s.Controls.Billing; b != nil {
		q, err := b.Quote(ctx, c.key, models, c.estimate())
		out.Quota = err
		if q.User != nil && q.Mode == apikey.UserCompletions && !q.BillingFallback {
			left := int(q.User.PointsRemaining())
			out.PointsRemaining = &left
		}
	}
	return out
}
