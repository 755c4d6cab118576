// Package chain is the failover core: it resolves the chain of models a request names, runs the
// attempts in order under their timeouts and the request's deadline, and reports what happened.
// It knows nothing of HTTP servers, AWS or any provider's wire format.
package chain

import (
	"errors"
	"fmt"

	"github.com/secureai-gateway/gateway/internal/fault"
)

// Reason classifies a failed attempt. The first four are the seed's failover triggers;
// ContextLength triggers failover only when a request names it in `on`.
type Reason string

const (
	ConnectionError Reason = "connection_error"
	ServerError     Reason = "server_error"
	RateLimit       Reason = "rate_limit"
	Timeout         Reason = "timeout"
	// ContextLength is a provider refusing a request too long for the model. It is final unless
	// `on` names it, and then fails over only to models with a larger context window.
	ContextLength Reason = "context_length"
)

// Reasons lists every failover reason in a stable order.
var Reasons = [...]Reason{ConnectionError, ServerError, RateLimit, Timeout, ContextLength}

func (r Reason) bit() Triggers {
	for i, known := range Reasons {
		if r == known {
			return 1 << i
		}
	}
	return 0
}

// Triggers is the set of reasons that may fail over (the request's `on`).
type Triggers uint8

// AllTriggers is the default `on`: the seed's four reasons (context_length is opt-in).
const AllTriggers Triggers = 1<<4 - 1

// Has reports whether r is in the set.
func (t Triggers) Has(r Reason) bool { b := r.bit(); return b != 0 && t&b != 0 }

// List returns the reasons in the set, in the canonical order.
func (t Triggers) List() []Reason {
	out := make([]Reason, 0, len(Reasons))
	for _, r := range Reasons {
		if t.Has(r) {
			out = append(out, r)
		}
	}
	return out
}

// ParseTriggers turns names into a set; an unknown name is an error naming it.
func ParseTriggers(field string, names []string) (Triggers, error) {
	var t Triggers
	for _, n := range names {
		b := Reason(n).bit()
		if b == 0 {
			return 0, &InputError{Field: field, Message: fmt.Sprintf("unknown failover trigger %q (allowed: connection_error, server_error, rate_limit, timeout, context_length)", fault.Clip(n, 64))}
		}
		t |= b
	}
	return t, nil
}

// Classified is implemented by errors that know their failover reason. A provider error for which
// FailoverReason returns "" is final: the caller's fault, never retried on another model.
type Classified interface {
	error
	FailoverReason() Reason
}

// ReasonOf returns the failover reason carried by err, or "" when err is final.
func ReasonOf(err error) Reason {
	var c Classified
	if errors.As(err, &c) {
		return c.FailoverReason()
	}
	return ""
}

// InputError is a request that the chain rules reject; it names the offending field.
type InputError struct {
	Field   string
	Message string
}

func (e *InputError) Error() string { return e.Field + ": " + e.Message }

// Fault implements fault.Describer: a 400 naming the field.
func (e *InputError) Fault() *fault.Error { return fault.Invalid(e.Field, e.Error()) }
