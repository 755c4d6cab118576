package gemini

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
)

// statusError classifies a non-2xx answer from its status and Google's error body
// {"error":{"code","message","status","details"}} (some endpoints wrap it in an array). Its
// RetryInfo delay counts only when the answer has no Retry-After header.
func (a *adapter) statusError(status int, body []byte) *provider.Error {
	e := a.apiError(status, errorObject(body))
	e.RetryAfter = retryDelay(errorObject(body))
	return e
}

func errorObject(body []byte) gjson.Result {
	if e := gjson.GetBytes(body, "error"); e.Exists() {
		return e
	}
	return gjson.GetBytes(body, "0.error")
}

// apiError classifies a Google API error by HTTP status (or, inside a stream, its code) and its
// canonical status name. Gemini names no code for a too-long prompt, so that is recognised by its
// documented message.
func (a *adapter) apiError(status int, e gjson.Result) *provider.Error {
	if status == 0 {
		status = int(e.Get("code").Int())
	}
	msg, canonical := e.Get("message").String(), e.Get("status").String()
	if a.key != "" {
		msg = strings.ReplaceAll(msg, a.key, "[redacted]") // never echo the credential
	}
	pe := &provider.Error{Status: status, Reason: provider.ReasonForStatus(status), Err: fmt.Errorf("gemini %d %s", status, canonical)}
	switch canonical {
	case "RESOURCE_EXHAUSTED":
		pe.Reason = chain.RateLimit
	case "UNAVAILABLE", "INTERNAL":
		pe.Reason = chain.ServerError
	case "UNAUTHENTICATED", "PERMISSION_DENIED":
		return pe.CredentialRejected(a.name)
	}
	if pe.Reason != "" {
		return pe.Explain(a.name, msg)
	}
	lower := strings.ToLower(msg)
	if strings.Contains(lower, "api key") || hasReason(e, "API_KEY_INVALID") {
		// Gemini answers a bad key with 400 INVALID_ARGUMENT: still the gateway's problem.
		return pe.CredentialRejected(a.name)
	}
	pe.Explain(a.name, msg)
	switch {
	case strings.Contains(lower, "maximum number of tokens"), strings.Contains(lower, "token count"), strings.Contains(lower, "context window"):
		pe.Status, pe.Code = http.StatusBadRequest, provider.ContextLengthCode
	case strings.Contains(lower, "safety"), strings.Contains(lower, "prohibited content"):
		pe.Status, pe.Code = http.StatusBadRequest, "content_filter"
	case pe.Status == http.StatusNotFound:
		pe.Code = "model_not_found"
	case pe.Status == 0:
		pe.Status = http.StatusBadRequest
	}
	return pe
}

func hasReason(e gjson.Result, reason string) bool {
	for _, d := range e.Get("details").Array() {
		if d.Get("reason").String() == reason {
			return true
		}
	}
	return false
}

// retryDelay reads google.rpc.RetryInfo, Gemini's way of saying when to retry after a 429.
func retryDelay(e gjson.Result) time.Duration {
	for _, d := range e.Get("details").Array() {
		if strings.HasSuffix(d.Get("@type").String(), "google.rpc.RetryInfo") {
			if v, err := time.ParseDuration(d.Get("retryDelay").String()); err == nil && v > 0 {
				return v
			}
		}
	}
	return 0
}

// contentFiltered is the final error for a prompt Gemini blocked outright (promptFeedback).
func contentFiltered(reason string) *provider.Error {
	return &provider.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "content_filter",
		Message: "the prompt was blocked by the provider's safety filters (" + reason + ")"}
}

func malformed(what string) *provider.Error { return provider.Malformed("gemini", what) }
