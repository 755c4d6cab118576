package openai

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/tidwall/gjson"
)

// statusError turns a non-2xx answer into a classified error, keeping the provider's own message,
// type and code (context_length_exceeded, content_filter…) for the caller when it is final.
func statusError(status int, raw []byte) *provider.Error {
	e := errorFrom(gjson.GetBytes(raw, "error"))
	e.Status = status
	e.Reason = provider.ReasonForStatus(status)
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
