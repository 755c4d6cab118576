package provider

import "github.com/secureai-gateway/gateway/internal/chain"

// Malformed reports an answer that is not the provider's documented shape (what: "response",
// "stream event"…): the provider failed, so another model may be tried.
func Malformed(name, what string) *Error {
	return &Error{Reason: chain.ServerError, Type: "server_error", Message: "provider " + name + " sent a malformed " + what}
}
