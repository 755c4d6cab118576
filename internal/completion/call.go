package completion

import (
	"context"
	"sync"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/policy"
	"github.com/secureai-gateway/gateway/internal/provider"
)

// Input is what a surface hands over once it has validated its own format: the OpenAI-shaped
// body every attempt translates afresh, and the fields the gateway itself reads from it, read by
// the surface in its one pass over the body — the completion never parses the body again.
type Input struct {
	Surface string // "openai" or "classic": who answers, for observers
	Body    []byte
	Chain   chain.Spec // the chain fields (model, models, fallback_models, redundancy), judged
	Policy  string     // smltp_policy as sent; "" when none
	UserID  string     // on-behalf-of user; "" when none
	Stream  bool       // the caller asked for a stream (SSE): Call.Stream, not Call.Complete
	// MaxTokens is the output the request allows (the larger of max_tokens and
	// max_completion_tokens), read by the surface in its one pass over the body; 0 when unset.
	MaxTokens int
	// Native is the caller's request in its own wire (the Messages and Responses surfaces): an
	// attempt to a provider of that wire passes it through instead of translating Body.
	Native *provider.Native
}

// Call is a completion admitted to run: its caller, its resolved chain and its policy. Run it
// once, with Complete or Stream.
type Call struct {
	Plan   chain.Plan
	Policy policy.Applied
	Input  Input

	svc       *Service
	key       *apikey.Key
	requestID string
	once      sync.Once

	// Governance state (controls.go).
	routes        []catalog.Route  // where each target's attempts go, resolved once by Open, in order
	models        []*catalog.Model // each route's catalog entry (its deployment's), in order
	verdicts      []policy.Verdict
	reservation   *billing.Reservation
	hedgeHolds    []*billing.Reservation // the quota held for each hedge started (hedge_after_ms)
	mu            sync.Mutex             // guards attempts: a hedge sends beside the running attempt
	attempts      []attemptRecord        // one per attempt sent, in start order
	servedAttempt int                    // index into attempts of the one that served; -1: none yet

	trace *callTrace // nil unless the service has a Tracer (trace.go)
}

// Open is the one way into a completion: it reads the caller from ctx and runs the checks of a
// call (checks.go) — on-behalf-of, the chain and every model of it, the SMLTP policy, the breaker
// — before any attempt, so a chain that could not fully run is refused with nothing spent or
// counted. Complete and Stream then admit it (counted and reserved) just before their first
// attempt — so an idempotent replay, which runs neither, is neither. A refusal is reported to the
// observer like any other end of a request.
func (s *Service) Open(ctx context.Context, in Input) (*Call, error) {
	c := s.newCall(ctx, in)
	if err := c.runSteps(ctx, false); err != nil {
		c.finish(ctx, Outcome{Err: err})
		return nil, err
	}
	return c, nil
}

func (s *Service) newCall(ctx context.Context, in Input) *Call {
	return &Call{Input: in, svc: s, key: identity.Key(ctx), requestID: identity.RequestID(ctx), servedAttempt: -1}
}

// modelsOf is each route's catalog entry, in order: what policy, limits and billing check.
func modelsOf(routes []catalog.Route) []*catalog.Model {
	models := make([]*catalog.Model, len(routes))
	for i, r := range routes {
		models[i] = r.Model
	}
	return models
}

// Outcome is how a completion ended, told to the observer exactly once per request.
type Outcome struct {
	RequestID string
	Key       *apikey.Key
	Surface   string
	Stream    bool
	Plan      chain.Plan // empty when the request was refused before a chain was resolved
	Policy    policy.Applied
	Served    string          // the model that answered; "" when none did
	Usage     *provider.Usage // as the serving provider reported it; nil when it reported none
	// Resumed is the model that continued the stream after Served broke off (on_interrupt:
	// resume), with what it produced; Usage is then Served's part, estimated from the text it
	// had delivered.
	Resumed      string
	ResumedUsage *provider.Usage
	Report       chain.Report
	// BundleID is the serving attempt's entitlement token id ("" when none).
	BundleID string
	// Bill is what the served model cost (nil when nothing was billed); BillingErr and
	// ReceiptErr are failures to bill or to keep the receipt, after the answer was served.
	Bill        *billing.Bill
	ResumedBill *billing.Bill // what the resumed model's part cost
	BillingErr  error
	ReceiptErr  error
	// Err is why the request did not end whole: a refusal, an exhausted chain, an interrupted
	// stream, or chain.ErrCanceled when the caller went away. nil for a whole answer.
	Err  error
	Kind fault.Kind // Err's kind; meaningless when Err is nil
}

// Failover is one transition of a chain, with who made the request.
type Failover struct {
	RequestID string
	Surface   string // the API the request came through, as Input.Surface
	Key       *apikey.Key
	chain.Transition
}

// Observers tells each of its observers, in order.
type Observers []Observer

// FailedOver implements Observer.
func (os Observers) FailedOver(ctx context.Context, f Failover) {
	for _, o := range os {
		o.FailedOver(ctx, f)
	}
}

// Finished implements Observer.
func (os Observers) Finished(ctx context.Context, out Outcome) {
	for _, o := range os {
		o.Finished(ctx, out)
	}
}

// Observer is told what happens to completions: billing, events and audit attach here, so no
// surface does any of it twice. Both calls must not block.
type Observer interface {
	FailedOver(ctx context.Context, f Failover)
	Finished(ctx context.Context, o Outcome)
}

func (c *Call) finish(ctx context.Context, o Outcome) {
	c.once.Do(func() {
		// Billing, the receipt and listeners record what happened even when the caller has gone;
		// they keep the caller's identity, not its cancellation.
		ctx = context.WithoutCancel(ctx)
		c.endServed(&o) // the answer has ended; settling it is not the attempt's time
		c.settle(ctx, &o)
		o.BundleID = c.BundleID()
		if c.svc.Observer == nil {
			return
		}
		o.RequestID, o.Key, o.Surface, o.Stream = c.requestID, c.key, c.Input.Surface, c.Input.Stream
		o.Plan, o.Policy = c.Plan, c.Policy
		if o.Err != nil {
			o.Kind = fault.KindOf(o.Err)
		}
		c.svc.Observer.Finished(ctx, o)
	})
}

// engine is the service's engine with this call's failovers reported to the observer.
func (c *Call) engine() chain.Engine {
	e := c.svc.Engine
	if c.svc.Tracer != nil {
		c.trace = &callTrace{}
		e.Trace = c.traceAttempt
	}
	if obs := c.svc.Observer; obs != nil {
		inner := e.OnFailover
		e.OnFailover = func(ctx context.Context, t chain.Transition) {
			if inner != nil {
				inner(ctx, t)
			}
			obs.FailedOver(ctx, Failover{RequestID: c.requestID, Surface: c.Input.Surface, Key: c.key, Transition: t})
		}
	}
	if c.Plan.HedgeAfter > 0 {
		e.Hedge = c.hedge
	}
	return e
}
