package completion

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/entitlement"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/policy"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/receipt"
)

// Controls make every completion a governed call (SPEC 7–9): what a key may spend, which policy
// it runs under, and a signed record of each attempt. Every field is optional; the zero value
// governs nothing beyond the key's model allowlist and the built-in policies.
type Controls struct {
	// Policies are the SMLTP policies; nil: the built-in ones.
	Policies *policy.Set
	// Ledger admits a request before its first attempt — counts it in its key's windows and holds
	// the chain's dearest cost, or does neither — and settles it after the answer together with its
	// receipt: one atomic store write each way (internal/ledger).
	Ledger interface {
		Admit(ctx context.Context, key *apikey.Key, chain []*catalog.Model, est billing.Estimate, now time.Time) (*billing.Reservation, error)
		// Reserve holds more for an admitted request — a hedge, a resumed stream's continuation —
		// as a hold of its own, refunded if it never settles; nil when nothing is billed.
		Reserve(ctx context.Context, key *apikey.Key, chain []*catalog.Model, est billing.Estimate, now time.Time) (*billing.Reservation, error)
		Settle(ctx context.Context, r *billing.Reservation, bill *billing.Bill, rec *receipt.Record) error
		// Prefetch starts reading what Admit will need, so the read runs beside the checks
		// before it; it never blocks.
		Prefetch(ctx context.Context, key *apikey.Key)
	}
	// Counts says, reading only, whether a key's request windows are full, as admission would
	// refuse it (POST /policy-check); nil: not reported.
	Counts interface {
		Full(ctx context.Context, key *apikey.Key, now time.Time) error
	}
	// Breakers refuse a contained key or user, before the chain and before each attempt, and
	// count policy violations toward opening on their own.
	Breakers interface {
		Check(ctx context.Context, key *apikey.Key) error
		RecordViolation(ctx context.Context, key *apikey.Key) error
	}
	// Keys are read again before each attempt after the first, so a key revoked mid-chain stops
	// the chain there.
	Keys identity.KeyFinder
	// Billing quotes a dry run's quota.
	Billing interface {
		Quote(ctx context.Context, key *apikey.Key, chain []*catalog.Model, est billing.Estimate) (billing.Quote, error)
	}
	// Tokens mint each attempt's Signed Entitlement Token from the exact bytes it sends.
	Tokens interface {
		Mint(a entitlement.Attempt) (entitlement.Token, error)
	}
	// Receipts draft the receipt of a served request; the Ledger keeps it, signed by its store.
	Receipts interface {
		Draft(c receipt.Claims) (receipt.Record, error)
	}
}

// attemptRecord is what the receipt says of one attempt.
type attemptRecord struct {
	model      string
	provider   string // the deployment's, for a model served by several
	jti        string
	bodySHA256 string
}

// estimate is what the reservation assumes: the prompt's tokens from its size, and max_tokens of
// output.
func (c *Call) estimate() billing.Estimate {
	return billing.Estimate{InputTokens: billing.EstimateTokens(len(c.Input.Body)), MaxOutputTokens: c.Input.MaxTokens}
}

// BillingFallback reports whether a user-completions key is paying by usage-by-model for this
// call because its points ran out.
func (c *Call) BillingFallback() bool { return c.reservation != nil && c.reservation.BillingFallback }

// BundleID is the serving attempt's entitlement token id; "" before a model served or when
// tokens are not minted.
func (c *Call) BundleID() string {
	if c.servedAttempt < 0 || c.servedAttempt >= len(c.attempts) {
		return ""
	}
	return c.attempts[c.servedAttempt].jti
}

// govern re-runs, before an attempt on route, the checks of a governed call — the key is still
// usable, its breaker closed, the policy allows this model — and returns the hook that mints the
// attempt's token from the exact bytes sent. A refusal here is a deliberate block: final, never
// a failover.
func (c *Call) govern(ctx context.Context, t chain.Target, route catalog.Route) (provider.SendHook, error) {
	ctl := &c.svc.Controls
	c.mu.Lock()
	n := len(c.attempts)
	c.mu.Unlock()
	if n > 0 && ctl.Keys != nil {
		k, err := ctl.Keys.KeyByHash(ctx, c.key.Hash)
		if err != nil || !k.Usable(time.Now()) {
			return nil, fault.New(fault.Unauthenticated, "Invalid API key", "the API key was revoked or expired during the request").WithCode("invalid_api_key")
		}
	}
	if n > 0 && ctl.Breakers != nil {
		if err := ctl.Breakers.Check(ctx, c.key); err != nil {
			return nil, err
		}
	}
	if err := c.Policy.Evaluate(route.Model).Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.attempts = append(c.attempts, attemptRecord{model: t.Model, provider: t.Provider})
	i := len(c.attempts) - 1
	c.mu.Unlock()
	if ctl.Tokens == nil {
		return nil, nil
	}
	return func(_ context.Context, body []byte) (http.Header, error) {
		tok, err := ctl.Tokens.Mint(entitlement.Attempt{KeyID: c.key.ID, Model: t.Model, Provider: route.Model.Provider,
			PolicyHash: c.Policy.Hash, Body: body, Unsent: !route.Entitled})
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.attempts[i].jti, c.attempts[i].bodySHA256 = tok.ID, tok.BodySHA256
		c.mu.Unlock()
		if !route.Entitled {
			return nil, nil
		}
		return http.Header{entitlement.Header: {tok.Compact}}, nil
	}, nil
}

// settle bills the served model once (or releases a failed chain's reservation) and keeps the
// receipt of a served request, in one write (the Ledger). It runs before the outcome is told, so
// the receipt can be fetched as soon as the answer arrives.
func (c *Call) settle(ctx context.Context, o *Outcome) {
	ctl := &c.svc.Controls
	var rec *receipt.Record
	if o.Served != "" && ctl.Receipts != nil && c.BundleID() != "" {
		r, err := ctl.Receipts.Draft(c.receipt(o)) // the store signs it (Record.Signed)
		if rec, o.ReceiptErr = &r, err; err != nil {
			rec = nil
		}
	}
	if r := c.reservation; r != nil && o.Served != "" {
		bill := r.Bill(c.modelOf(lineWith(o.Report, chain.Served)), billingUsage(o.Usage))
		o.Bill = &bill
	}
	if ctl.Ledger != nil && (c.reservation != nil || rec != nil) {
		if err := ctl.Ledger.Settle(ctx, c.reservation, o.Bill, rec); err != nil {
			if c.reservation != nil {
				o.BillingErr = err
			}
			if rec != nil {
				o.ReceiptErr = err
			}
		}
	}
	c.settleHedges(ctx, o)
	if o.Resumed != "" && ctl.Ledger != nil {
		// The model that continued a broken stream is billed for what it produced, apart.
		var err error
		o.ResumedBill, err = c.billResumed(ctx, o)
		o.BillingErr = errors.Join(o.BillingErr, err)
	}
}

// hedge is asked before a hedge starts beside a slow attempt (hedge_after_ms): admission held
// the chain's dearest cost for the answer, so the hedge holds its own model's cost on top, and a
// key that cannot pay for both at once is not hedged — the chain waits for the running attempt.
// Without billing there is nothing to hold.
func (c *Call) hedge(ctx context.Context, _, next chain.Target) bool {
	l := c.svc.Controls.Ledger
	if l == nil || c.reservation == nil {
		return true
	}
	r, err := l.Reserve(ctx, c.key, []*catalog.Model{c.routeOf(next).Model}, c.estimate(), time.Now())
	if err != nil {
		return false
	}
	if r != nil {
		c.hedgeHolds = append(c.hedgeHolds, r)
	}
	return true
}

// settleHedges settles the hedges' holds: one per attempt cancelled because the attempt beside it
// served first, billed for what it produced (billing.SettleCancelled); the rest released.
func (c *Call) settleHedges(ctx context.Context, o *Outcome) {
	holds := c.hedgeHolds
	for _, line := range o.Report.Attempts {
		if line.Status != chain.Cancelled || line.Reason != chain.HedgeLost || len(holds) == 0 {
			continue
		}
		_, err := holds[0].SettleCancelled(ctx, c.modelOf(line))
		holds = holds[1:]
		o.BillingErr = errors.Join(o.BillingErr, err)
	}
	for _, h := range holds {
		o.BillingErr = errors.Join(o.BillingErr, h.Release(ctx))
	}
}

// billResumed bills the model that continued a broken stream for what it produced, once it has
// ended: a hold and its settlement at once. The continuation itself held nothing while it ran, so
// a user out of quota by then is not refused it; the refusal is the outcome's billing error.
func (c *Call) billResumed(ctx context.Context, o *Outcome) (*billing.Bill, error) {
	m := c.modelOf(lineWith(o.Report, chain.Resumed))
	r, err := c.svc.Controls.Ledger.Reserve(ctx, c.key, []*catalog.Model{m}, c.estimate(), time.Now())
	if r == nil || err != nil {
		return nil, err
	}
	bill, err := r.Settle(ctx, m, billingUsage(o.ResumedUsage))
	return &bill, err
}

// billingUsage is what a provider reported, as billing counts it; nil when it reported none.
func billingUsage(u *provider.Usage) *billing.Usage {
	if u == nil {
		return nil
	}
	return &billing.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
}

// modelOf is the catalog entry a report line's attempt was sent to: its deployment's, for a
// model served by several, whose price is then the deployment's when it has one.
func (c *Call) modelOf(line chain.Attempt) *catalog.Model {
	return c.routeOf(chain.Target{Model: line.Model, Provider: line.Provider}).Model
}

// routeOf is where t's attempts go, as Open resolved it: its model's route, or its deployment's.
func (c *Call) routeOf(t chain.Target) catalog.Route {
	for i, pt := range c.Plan.Targets {
		if pt.Model == t.Model && pt.Provider == t.Provider {
			return c.routes[i]
		}
	}
	return c.routes[0]
}

// receipt is the signed record of a served request: the policy and its verdict, every attempt
// with its token id, outcome and body hash, and the model that served.
func (c *Call) receipt(o *Outcome) receipt.Claims {
	rc := receipt.Claims{BundleID: c.BundleID(), RequestID: c.requestID, KeyID: c.key.ID, ServedModel: o.Served,
		Policy: receipt.PolicySection(c.Policy, c.judged()), IssuedAt: time.Now().Unix()}
	i := 0
	for _, line := range o.Report.Attempts {
		if line.Status == chain.Skipped || i >= len(c.attempts) {
			continue
		}
		a := c.attempts[i]
		i++
		outcome := string(line.Status)
		if line.Status == chain.Failed {
			outcome = string(line.Reason)
		}
		rc.Attempts = append(rc.Attempts, receipt.Attempt{JTI: a.jti, Model: a.model, Provider: a.provider, Outcome: outcome, BodySHA256: a.bodySHA256})
	}
	return rc
}

// judged are the verdicts on what the call could run: a deployment passed over for the policy
// was never the call's to breach.
func (c *Call) judged() []policy.Verdict {
	denied := func(t chain.Target) bool { return t.Skip == chain.PolicyDenied }
	if !slices.ContainsFunc(c.Plan.Targets, denied) {
		return c.verdicts
	}
	out := make([]policy.Verdict, 0, len(c.verdicts))
	for i, t := range c.Plan.Targets {
		if !denied(t) {
			out = append(out, c.verdicts[i])
		}
	}
	return out
}
