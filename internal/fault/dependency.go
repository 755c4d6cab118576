package fault

import (
	"errors"
	"fmt"
)

// Misconfiguration is implemented by an adapter's error that blames the deployment rather than
// the moment — a role that lacks a permission, credentials the service refuses, a table that does
// not exist — so this package needs to know no cloud. Fix says what to change; "" when the
// error is not one (an adapter's one error type may carry either).
type Misconfiguration interface {
	error
	Fix() string
}

// CodeConfiguration is the code of a dependency failure that no retry can mend.
const CodeConfiguration = "configuration_error"

// Dependency is what a caller is told when what (a store, "the billing store") failed with err:
// kind Unavailable, "try again" with message, for a failure of the moment; for a
// Misconfiguration, kind Internal with code configuration_error and a message that a retry
// will not help — the fix goes into the cause, which the error's log line records, never into
// the answer.
func Dependency(what, message string, err error) *Error {
	var m Misconfiguration
	if errors.As(err, &m) && m.Fix() != "" {
		return New(Internal, "Configuration error", "the gateway's deployment is misconfigured ("+what+"); retrying will not help, and the request id identifies the fix in the logs").
			WithCode(CodeConfiguration).Wrap(fmt.Errorf("%s: %w", m.Fix(), err))
	}
	return New(Unavailable, "Service unavailable", message).Wrap(err)
}
