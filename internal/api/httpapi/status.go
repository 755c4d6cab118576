package httpapi

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// statuses is SPEC section 11: the HTTP status of every kind, the same on every surface.
var statuses = [...]int{
	fault.Internal:         http.StatusInternalServerError,
	fault.InvalidRequest:   http.StatusBadRequest,
	fault.Unauthenticated:  http.StatusUnauthorized,
	fault.Forbidden:        http.StatusForbidden,
	fault.NotFound:         http.StatusNotFound,
	fault.MethodNotAllowed: http.StatusMethodNotAllowed,
	fault.Conflict:         http.StatusConflict,
	fault.Unprocessable:    http.StatusUnprocessableEntity,
	fault.TooLarge:         http.StatusRequestEntityTooLarge,
	fault.RequestTimeout:   http.StatusRequestTimeout,
	fault.RateLimited:      http.StatusTooManyRequests,
	fault.QuotaExceeded:    http.StatusPaymentRequired,
	fault.ChainExhausted:   http.StatusBadGateway,
	fault.ChainRateLimited: http.StatusTooManyRequests,
	fault.UpstreamRejected: http.StatusBadRequest,
	fault.UpstreamAuth:     http.StatusBadGateway,
	fault.ModelUnavailable: http.StatusServiceUnavailable,
	fault.CircuitOpen:      http.StatusServiceUnavailable,
	fault.Unavailable:      http.StatusServiceUnavailable,
	fault.NotImplemented:   http.StatusNotImplemented,
	fault.Interrupted:      http.StatusBadGateway,
	// Never sent (the caller has gone); nginx's "client closed request", for logs.
	fault.Canceled: 499,
}

// Status is the HTTP status for e. A provider's own refusal keeps the provider's 4xx.
func Status(e *fault.Error) int {
	if e.K == fault.UpstreamRejected && e.Status >= 400 && e.Status < 500 {
		return e.Status
	}
	if int(e.K) < len(statuses) && statuses[e.K] != 0 {
		return statuses[e.K]
	}
	return http.StatusInternalServerError
}

// retry is SPEC 11's x-should-retry of every kind that can be sent: whether a retry of the same
// request can help. A kind left out (an unexpected internal error, an open circuit without a
// reset time) sends no header, and the client's own rules apply.
var retry = map[fault.Kind]bool{
	fault.InvalidRequest: false, fault.Unauthenticated: false, fault.Forbidden: false, fault.NotFound: false,
	fault.MethodNotAllowed: false, fault.Unprocessable: false, fault.TooLarge: false, fault.QuotaExceeded: false,
	fault.UpstreamRejected: false, fault.UpstreamAuth: false, fault.ModelUnavailable: false, fault.NotImplemented: false,
	fault.Conflict: true, fault.RequestTimeout: true, fault.RateLimited: true, fault.Unavailable: true,
	// The gateway has already tried every model of an exhausted chain: a client's own retries
	// would run the whole chain again (the OpenAI SDKs three times, Claude Code eleven).
	fault.ChainExhausted: false,
}

// ShouldRetry is the x-should-retry header OpenAI's SDKs read before their own retry rules (SPEC
// 11): "false" where a retry cannot help (validation, configuration, missing credentials),
// "true" where it can (limits, outages: with Retry-After when e says when), "" to send none.
func ShouldRetry(e *fault.Error) string {
	switch {
	case e.K == fault.Internal && e.Code == fault.CodeConfiguration:
		return "false"
	case e.K == fault.CircuitOpen && e.RetryAfter > 0:
		return "true" // a breaker that closes at a known time
	case e.K == fault.ChainRateLimited:
		// Every model was rate limited: worth coming back only when a provider said when.
		return strconv.FormatBool(e.RetryAfter > 0)
	}
	r, ok := retry[e.K]
	if !ok {
		return ""
	}
	return strconv.FormatBool(r)
}

// WriteError writes body as the error answer for e: its status, Retry-After when e says when to
// come back, and one log line for a failure on the gateway's side (5xx other than an exhausted
// chain, which is the providers' failure and already in the answer).
func WriteError(w http.ResponseWriter, r *http.Request, e *fault.Error, body any) int {
	return WriteErrorStatus(w, r, e, Status(e), body)
}

// WriteErrorStatus is WriteError with the status a surface's own wire gives e (Anthropic's 529
// for an exhausted chain).
func WriteErrorStatus(w http.ResponseWriter, r *http.Request, e *fault.Error, status int, body any) int {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	}
	if status >= 500 && e.K != fault.ChainExhausted {
		slog.Default().ErrorContext(r.Context(), "request failed", "request_id", identity.RequestID(r.Context()),
			"route", r.Method+" "+r.URL.Path, "status", status, "kind", e.K.String(), "cause", causeOf(e))
	}
	WriteJSON(w, status, body)
	return status
}

func causeOf(e *fault.Error) string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Message
}
