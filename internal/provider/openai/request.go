package openai

import (
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// extensions are the gateway's own request fields; a provider never sees them.
var extensions = [...]string{"models", "fallback_models", "redundancy", "smltp_policy", "user_id"}

// upstreamBody edits a copy of the caller's bytes: the upstream model id, the gateway's fields
// removed, and usage requested on streams so the served model can be billed. Everything else,
// unknown fields included, passes through untouched.
func upstreamBody(req *provider.Request) ([]byte, error) {
	body, err := sjson.SetBytes(req.Body, "model", req.Model)
	if err != nil {
		return nil, invalidBody(err)
	}
	present := gjson.GetManyBytes(body, extensions[:]...)
	for i, f := range extensions {
		if present[i].Exists() {
			if body, err = sjson.DeleteBytes(body, f); err != nil {
				return nil, invalidBody(err)
			}
		}
	}
	if req.Stream {
		if body, err = sjson.SetBytes(body, "stream", true); err == nil {
			body, err = sjson.SetBytes(body, "stream_options.include_usage", true)
		}
		if err != nil {
			return nil, invalidBody(err)
		}
	}
	return body, nil
}

func invalidBody(err error) error {
	return &provider.Error{Status: 400, Type: "invalid_request_error", Message: "request body is not a JSON object", Err: err}
}
