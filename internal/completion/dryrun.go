package completion

import (
	"context"

	"github.com/secureai-gateway/gateway/internal/policycheck"
)

// FailoverEngine names the attempt loop in a dry run's plan.
const FailoverEngine = "secureai-chain"

// DryRun walks, read-only, the checks Open and the first attempt would run for in (checks.go) —
// on-behalf-of, the chain, each model's access, the SMLTP policy and its access for every model,
// the breaker, the request limits, the quota — and reports each conclusion (POST /policy-check).
// It calls no provider, bills nothing, reserves nothing, counts against no limit and records no
// violation. validation is the surface's own verdict on the body (nil when it passed).
func (s *Service) DryRun(ctx context.Context, in Input, validation error) policycheck.Inputs {
	out := policycheck.Inputs{FailoverEngine: FailoverEngine}
	s.newCall(ctx, in).dryRun(ctx, &out, validation)
	return out
}
