package openai

import (
	"net/http"
	"strings"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/tidwall/gjson"
)

// statusError turns a non-2xx answer into a classified error, keeping the provider's own message,
// type and code (context_length_exceeded, content_filter…) for the caller when it is final. A 401
// refuses the gateway's own credential (name's key), which the caller must neither see echoed
// (OpenAI-compatible servers quote the key they got) nor mistake for a rejection of their own key.
func statusError(name, key string, status int, raw []byte) *provider.Error {
	e := errorFrom(gjson.GetBytes(raw, "error"))
	e.Status = status
	e.Reason = provider.ReasonForStatus(status)
	if status == http.StatusUnauthorized {
		e.Code, e.Param = "", ""
		return e.CredentialRejected(name)
	}
	if key != "" {
		e.Message = strings.ReplaceAll(e.Message, key, "[redacted]") // never echo the credential
	}
	if e.Message == "" {
		e.Message = "provider answered " + http.StatusText(status)
	}
	return e
}

// streamError classifies an error object that arrives inside a stream.
func streamError(obj gjson.Result) *provider.Error {
	e := errorFrom(obj)
	switch {
	case e.Code == "rate_limit_exceeded" || e.Type == "rate_limit_error" || e.Type == "rate_limit_exceeded":
		e.Reason = chain.RateLimit
	case e.Type == "invalid_request_error":
		e.Reason = ""
		e.Status = 400
	default:
		e.Reason = chain.ServerError
	}
	if e.Message == "" {
		e.Message = "provider reported an error in the stream"
	}
	return e
}

func errorFrom(obj gjson.Result) *provider.Error {
	e := &provider.Error{}
	if obj.IsObject() {
		e.Message = obj.Get("message").String()
		e.Type = obj.Get("type").String()
		e.Code = obj.Get("code").String()
		e.Param = obj.Get("param").String()
	} else if obj.Type == gjson.String {
		e.Message = obj.Str
	}
	return e
}
