package chain

import (
	"errors"
	"fmt"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
)

// Status of one attempt in a report.
type Status string

const (
	Served Status = "served"
	Failed Status = "failed"
	// Skipped is a model passed over without an attempt (unhealthy, or a context window too
	// small after a context-length refusal).
	Skipped Status = "skipped"
	// Resumed is a model that continued a stream another model had begun (on_interrupt: resume).
	Resumed Status = "resumed"
	// Cancelled is an attempt the engine stopped itself: the hedge it raced served first
	// (reason HedgeLost).
	Cancelled Status = "cancelled"
)

// HedgeLost is the reason of an attempt cancelled because the attempt running beside it
// (hedge_after_ms) produced its first content token, or its answer, first.
const HedgeLost Reason = "hedge_lost"

// HedgeAfter is the reason of a transition that starts the next model beside a slow attempt
// instead of after a failed one (hedge_after_ms).
const HedgeAfter Reason = "hedge_after"

// HedgeUnaffordable is why an attempt ran unhedged past hedge_after_ms: the key could not
// reserve the hedge's quota, so the chain waited for the attempt as without hedging.
const HedgeUnaffordable Reason = "quota"

// Unhealthy is the reason recorded for a model skipped while it cools down (skip_unhealthy).
const Unhealthy Reason = "unhealthy"

// PolicyDenied is the reason recorded for a deployment skipped because the request's SMLTP
// policy forbids its provider or region while another deployment of its model is allowed.
const PolicyDenied Reason = "policy_denied"

// Rejected is the reason recorded for an attempt that failed for a cause that never fails over:
// the provider refused the request itself (4xx other than 429) or the gateway blocked it.
const Rejected Reason = "rejected"

// Attempt is one line of the failover report.
type Attempt struct {
	Model string `json:"model"`
	// Provider names the deployment the attempt went to, for a model served by several.
	Provider  string `json:"provider,omitempty"`
	Status    Status `json:"status"`
	Reason    Reason `json:"reason,omitempty"`
	LatencyMS int64  `json:"latency_ms"`
	// Retry numbers a same-model retry (retry: attempts); 0 for a model's first attempt.
	Retry int `json:"retry,omitempty"`
	// CharsDelivered, on a resumed stream's line, is how much text the caller had received when
	// the interrupted model broke off.
	CharsDelivered int `json:"chars_delivered,omitempty"`
	// Hedge marks an attempt started beside the one before it in the report, when that one had
	// not answered after hedge_after_ms, rather than after it failed.
	Hedge bool `json:"hedge,omitempty"`
	// HedgeSkipped says why no hedge started beside this attempt when hedge_after_ms passed.
	HedgeSkipped Reason `json:"hedge_skipped,omitempty"`
}

// Report is the failover report of a multi-model chain.
type Report struct {
	Occurred bool      `json:"occurred"`
	Attempts []Attempt `json:"attempts"`
}

// StopCause says why a chain ended without a served attempt.
type StopCause int

const (
	// EndOfChain: every model was tried.
	EndOfChain StopCause = iota
	// NotTriggered: the last failure's reason is not in the request's `on`.
	NotTriggered
	// DeadlineReached: the request's deadline left no time for another attempt.
	DeadlineReached
)

// Exhausted is the outcome of a chain in which every attempt made failed with a failover reason.
type Exhausted struct {
	Attempts []Attempt
	Cause    StopCause
	// RetryAfter is the soonest any rate-limited provider said it would take requests again;
	// 0 when none said.
	RetryAfter time.Duration
}

// RetryHinter is implemented by errors that carry a provider's Retry-After.
type RetryHinter interface {
	RetryAfterHint() time.Duration
}

// RateLimitedOnly reports whether every failure was a rate limit: the caller then gets a 429
// (their own pacing can help), otherwise a 502.
func (e *Exhausted) RateLimitedOnly() bool {
	failed := 0
	for _, a := range e.Attempts {
		if a.Status != Failed {
			continue // a skipped model made no attempt
		}
		failed++
		if a.Reason != RateLimit {
			return false
		}
	}
	return failed > 0
}

// Fault implements fault.Describer.
func (e *Exhausted) Fault() *fault.Error {
	f := fault.New(fault.ChainExhausted, "All model attempts failed", e.Error()).WithCode("all_models_failed")
	if e.RateLimitedOnly() {
		f.K, f.RetryAfter = fault.ChainRateLimited, e.RetryAfter
	}
	return f
}

// AttemptsSoFar implements Attempted.
func (e *Exhausted) AttemptsSoFar() []Attempt { return e.Attempts }

func (e *Exhausted) Error() string {
	var last Attempt
	failed := 0
	for _, a := range e.Attempts {
		if a.Status == Failed {
			last, failed = a, failed+1
		}
	}
	if failed == 0 {
		return "No model attempt could be made: the request deadline left no time for one"
	}
	msg := fmt.Sprintf("All %d model attempt(s) failed (last: %s — %s)", failed, last.Model, last.Reason)
	switch e.Cause {
	case NotTriggered:
		msg += fmt.Sprintf("; %s does not trigger failover for this request", last.Reason)
	case DeadlineReached:
		msg += "; the request deadline left no time for another attempt"
	}
	return msg
}

// Attempted is implemented by errors that end a chain after attempts were made, so the caller is
// told what was tried.
type Attempted interface {
	error
	AttemptsSoFar() []Attempt
}

// AttemptsOf returns the attempts err carries; nil when none were made.
func AttemptsOf(err error) []Attempt {
	var a Attempted
	if errors.As(err, &a) {
		return a.AttemptsSoFar()
	}
	return nil
}

// Stopped is a final error that ended a chain after the attempts in it (a provider's refusal, a
// gateway block between attempts).
type Stopped struct {
	Err      error
	Attempts []Attempt
}

func (e *Stopped) Error() string { return e.Err.Error() }

func (e *Stopped) Unwrap() error { return e.Err }

// AttemptsSoFar implements Attempted.
func (e *Stopped) AttemptsSoFar() []Attempt { return e.Attempts }

// ErrCanceled is returned when the caller went away: nothing is reported to anyone.
var ErrCanceled error = fault.New(fault.Canceled, "Canceled", "the caller canceled the request")
