package translate

import "github.com/secureai-gateway/gateway/internal/provider"

// Invalid is the 400 for a request field the adapter cannot translate: the caller's mistake, so
// no other model in the chain is tried.
func Invalid(param, msg string) *provider.Error {
	return &provider.Error{Status: 400, Type: "invalid_request_error", Param: param, Message: msg}
}
