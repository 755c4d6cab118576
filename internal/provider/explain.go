package provider

import (
	"cmp"
	"net/http"

	"github.com/secureai-gateway/gateway/internal/chain"
)

// Explain sets the OpenAI type and message of an error an upstream API answered with, from its
// failover reason: with one, the provider failed and another model may be tried (rate_limit_error
// or server_error); without one, it refused the request (invalid_request_error). msg is the
// provider's own words, already free of credentials; when it said nothing a generic text stands in.
func (e *Error) Explain(name, msg string) *Error {
	switch e.Reason {
	case "":
		e.Type, e.Message = "invalid_request_error", "provider "+name+": "+cmp.Or(msg, "request rejected")
	case chain.RateLimit:
		e.Type, e.Message = "rate_limit_error", "provider "+name+": "+cmp.Or(msg, "unavailable")
	default:
		e.Type, e.Message = "server_error", "provider "+name+": "+cmp.Or(msg, "unavailable")
	}
	return e
}

// CredentialRejected makes e the final answer for a provider refusing the gateway's own
// credential: not the caller's fault, and why is nothing the caller may see.
func (e *Error) CredentialRejected(name string) *Error {
	e.Reason, e.Status, e.Type = "", http.StatusBadGateway, UpstreamAuthType
	e.Message = "provider " + name + " rejected the gateway's credential"
	return e
}
