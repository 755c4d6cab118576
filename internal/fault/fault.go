// Package fault names the kinds of failure the contract distinguishes. Domain packages return a
// *fault.Error (or an error that reports a Kind) and say nothing of HTTP; each API surface turns a
// kind into its status and envelope in one table. A new deliberate block is one new error value,
// not one more case in a switch.
package fault

import (
	"errors"
	"time"
	"unicode/utf8"
)

// Kind is what went wrong, as far as the caller is concerned.
type Kind uint8

const (
	// Internal is an unexpected failure; its details never reach the caller.
	Internal Kind = iota
	InvalidRequest
	Unauthenticated
	Forbidden
	NotFound
	MethodNotAllowed
	Conflict
	// Unprocessable is a well-formed request the gateway cannot honour as sent (an
	// Idempotency-Key reused with another body).
	Unprocessable
	TooLarge
	RequestTimeout
	// RateLimited is the gateway's own request limit, or a rate-limited provider.
	RateLimited
	// QuotaExceeded is a points or budget limit: a deliberate block, never a failover.
	QuotaExceeded
	// ChainExhausted is a chain whose every attempt failed for a failover reason (502).
	ChainExhausted
	// ChainRateLimited is an exhausted chain whose every failure was a rate limit (429).
	ChainRateLimited
	// UpstreamRejected is a provider's final refusal (4xx other than 429); its status is the
	// provider's.
	UpstreamRejected
	// Interrupted is a stream that broke after its first content token: told to the caller in an
	// error frame, never as a status.
	Interrupted
	// UpstreamAuth is the gateway's own provider credential refused: the operator's problem.
	UpstreamAuth
	ModelUnavailable
	CircuitOpen
	// Unavailable is a dependency of the gateway (a store) that cannot be reached now.
	Unavailable
	NotImplemented
	// Canceled is a caller that went away: nobody is left to tell, but observers still learn it.
	Canceled
	kinds // the number of kinds; keep last
)

// Kinds lists every kind, for tables that must cover them all.
func Kinds() []Kind {
	out := make([]Kind, kinds)
	for i := range out {
		out[i] = Kind(i)
	}
	return out
}

var names = [kinds]string{
	Internal: "internal", InvalidRequest: "invalid_request", Unauthenticated: "unauthenticated",
	Forbidden: "forbidden", NotFound: "not_found", MethodNotAllowed: "method_not_allowed",
	Conflict: "conflict", Unprocessable: "unprocessable", TooLarge: "too_large",
	RequestTimeout: "request_timeout", RateLimited: "rate_limited", QuotaExceeded: "quota_exceeded",
	ChainExhausted: "chain_exhausted", ChainRateLimited: "chain_rate_limited",
	UpstreamRejected: "upstream_rejected", Interrupted: "interrupted", UpstreamAuth: "upstream_auth",
	ModelUnavailable: "model_unavailable", CircuitOpen: "circuit_open", Unavailable: "unavailable",
	NotImplemented: "not_implemented", Canceled: "canceled",
}

func (k Kind) String() string {
	if k < kinds {
		return names[k]
	}
	return "unknown"
}

// KindOf returns the kind err carries, Internal when it carries none.
func KindOf(err error) Kind { return From(err).K }

// Error is a failure with a kind and what the caller is told about it.
type Error struct {
	K       Kind
	Title   string // the classic envelope's short `error`, e.g. "Access denied"
	Message string // names what is wrong; never a secret
	Code    string // machine-readable, e.g. "model_not_allowed"
	Param   string // the offending request field, if one
	// Type overrides the OpenAI surface's error type for the kind; a provider's refusal keeps the
	// type the provider gave.
	Type string
	// RetryAfter says when the caller may try again (sent as Retry-After).
	RetryAfter time.Duration
	// ResetAt is when the limit that refused the request resets (the classic envelope's
	// reset_time); zero when no limit did.
	ResetAt time.Time
	// Status overrides the surface's status for the kind; only UpstreamRejected uses it (the
	// provider's own 4xx is passed on).
	Status int
	Err    error // the cause, for logs
}

// New returns an error of kind k.
func New(k Kind, title, message string) *Error { return &Error{K: k, Title: title, Message: message} }

// Invalid is a 400-kind error naming the offending field.
func Invalid(param, message string) *Error {
	return &Error{K: InvalidRequest, Title: "Invalid request", Message: message, Param: param}
}

// WithCode sets the machine-readable code.
func (e *Error) WithCode(code string) *Error { e.Code = code; return e }

// WithParam names the offending field.
func (e *Error) WithParam(param string) *Error { e.Param = param; return e }

// WithRetryAfter says when the caller may try again.
func (e *Error) WithRetryAfter(d time.Duration) *Error { e.RetryAfter = d; return e }

// Wrap keeps cause for logs.
func (e *Error) Wrap(cause error) *Error { e.Err = cause; return e }

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// Describer is implemented by typed errors that are not an *Error but can say what the caller is
// told (a chain's exhaustion, a provider's refusal), so this package needs to know none of them.
type Describer interface {
	error
	Fault() *Error
}

// From returns what the caller is told about err: the *Error it is or wraps, a Describer's
// description, or an Internal error that keeps err only as its cause.
func From(err error) *Error {
	var e *Error
	var d Describer
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &d):
		return d.Fault()
	}
	return &Error{K: Internal, Title: "Internal error", Code: "internal_error",
		Message: "the gateway failed unexpectedly; the request id identifies it in the logs", Err: err}
}

// Limits on what an error quotes back: a message may quote the caller's input (a model name, a
// field name), and a 1 MB model name must not come back as a 1 MB error.
const (
	MaxMessage = 1024
	MaxParam   = 128
)

// Clip returns s cut to at most n bytes on a rune boundary, marked when cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…(truncated)"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
