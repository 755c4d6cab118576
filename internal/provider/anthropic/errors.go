package anthropic

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
)

// apiError classifies an Anthropic error by HTTP status (0 for an error event inside a stream)
// and error type. Anthropic names no code for a too-long prompt or a content-filter block, so
// those are recognised by their documented messages.
func (a *adapter) apiError(status int, typ, msg string) *provider.Error {
	if a.key != "" {
		msg = strings.ReplaceAll(msg, a.key, "[redacted]") // never echo the credential
	}
	e := &provider.Error{Status: status, Reason: provider.ReasonForStatus(status), Err: fmt.Errorf("anthropic %d %s", status, typ)}
	switch typ {
	case "overloaded_error", "api_error", "timeout_error": // 529, 500, 504: the provider failed
		e.Reason = chain.ServerError
	case "rate_limit_error":
		e.Reason = chain.RateLimit
	case "authentication_error", "permission_error":
		return e.CredentialRejected(a.name)
	}
	if e.Explain(a.name, msg).Reason != "" {
		return e
	}
	if e.Status == 0 || e.Status == http.StatusRequestEntityTooLarge {
		e.Status = http.StatusBadRequest
	}
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(lower, "prompt is too long"), strings.Contains(lower, "context limit"), strings.Contains(lower, "context window"):
		e.Status, e.Code = http.StatusBadRequest, provider.ContextLengthCode
	case strings.Contains(lower, "content filtering"), strings.Contains(lower, "content policy"):
		e.Status, e.Code = http.StatusBadRequest, "content_filter"
	case e.Status == http.StatusNotFound:
		e.Code = "model_not_found"
	}
	return e
}
