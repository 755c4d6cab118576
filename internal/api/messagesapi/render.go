package messagesapi

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/fault"
)

// StatusOverloaded is Anthropic's status for an overloaded API, which an exhausted chain is to a
// Messages client: every model the gateway could use is failing.
const StatusOverloaded = 529

// types is Anthropic's error type for each kind (its documented set).
var types = [...]string{
	fault.Internal: "api_error", fault.InvalidRequest: "invalid_request_error",
	fault.Unauthenticated: "authentication_error", fault.Forbidden: "permission_error",
	fault.NotFound: "not_found_error", fault.MethodNotAllowed: "invalid_request_error",
	fault.Conflict: "invalid_request_error", fault.Unprocessable: "invalid_request_error",
	fault.TooLarge: "request_too_large", fault.RequestTimeout: "timeout_error",
	fault.RateLimited: "rate_limit_error", fault.QuotaExceeded: "billing_error",
	fault.ChainExhausted: "overloaded_error", fault.ChainRateLimited: "rate_limit_error",
	fault.UpstreamRejected: "invalid_request_error", fault.UpstreamAuth: "api_error",
	fault.ModelUnavailable: "api_error", fault.CircuitOpen: "api_error",
	fault.Unavailable: "api_error", fault.NotImplemented: "api_error",
	fault.Interrupted: "api_error", fault.Canceled: "invalid_request_error",
}

func typeOf(f *fault.Error) string {
	if int(f.K) < len(types) && types[f.K] != "" {
		return types[f.K]
	}
	return "api_error"
}

// Render writes err in Anthropic's error envelope, {"type":"error","error":{"type","message"}},
// with x-should-retry (Claude Code retries a 5xx, 429, 529 or 401 ten times unless it says false)
// and the attempts when a chain ran.
func Render(w http.ResponseWriter, r *http.Request, err error) {
	f := fault.From(err)
	if f.K == fault.InvalidRequest && f.Code == "model_not_found" {
		nf := *f
		nf.K = fault.NotFound
		f = &nf
	}
	e := map[string]any{"type": typeOf(f), "message": fault.Clip(f.Message, fault.MaxMessage)}
	if a := chain.AttemptsOf(err); len(a) > 0 {
		e["attempts"] = a
	}
	if v := httpapi.ShouldRetry(f); v != "" {
		w.Header().Set("X-Should-Retry", v)
	}
	status := httpapi.Status(f)
	if f.K == fault.ChainExhausted {
		status = StatusOverloaded
	}
	httpapi.WriteErrorStatus(w, r, f, status, map[string]any{"type": "error", "error": e})
}
