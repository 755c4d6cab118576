package openai

import (
	"strconv"

	"github.com/secureai-gateway/gateway/internal/jsonview"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// upstreamBody copies the caller's bytes once, field by field: the gateway's own fields are left
// out, model becomes the upstream id, and streams ask for usage so the served model can be billed
// (the caller's other stream_options pass through). Every other field, unknown ones included,
// passes through untouched — no decoding, no re-encoding.
func upstreamBody(req *provider.Request, stream bool) ([]byte, error) {
	if len(req.Body) == 0 {
		return nil, invalidBody()
	}
	// The API surfaces validated the body as a JSON object on arrival; it is only read while this
	// function runs, so viewing it as a string needs no copy.
	doc := gjson.Parse(jsonview.String(req.Body))
	if !doc.IsObject() {
		return nil, invalidBody()
	}
	out := make([]byte, 0, len(req.Body)+64)
	out = append(out, '{')
	streamOptions := ""
	hasModel := false
	doc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model": // kept in its place, so the body differs from the caller's only where it must
			hasModel = true
			out = append(strconv.AppendQuote(append(out, `"model":`...), req.Model), ',')
			return true
		case "models", "fallback_models", "fallbacks", "redundancy", "smltp_policy", "user_id":
			return true
		case "stream", "stream_options":
			if stream {
				if k.Str == "stream_options" && v.IsObject() {
					streamOptions = v.Raw
				}
				return true
			}
		}
		out = append(append(append(append(out, k.Raw...), ':'), v.Raw...), ',')
		return true
	})
	if !hasModel {
		out = append(strconv.AppendQuote(append(out, `"model":`...), req.Model), ',')
	}
	out = out[:len(out)-1] // the last field's comma
	if stream {
		out = append(out, `,"stream":true,"stream_options":`...)
		if streamOptions == "" {
			out = append(out, `{"include_usage":true}`...)
		} else {
			opts, err := sjson.Set(streamOptions, "include_usage", true)
			if err != nil {
				return nil, invalidBody()
			}
			out = append(out, opts...)
		}
	}
	return append(out, '}'), nil
}

func invalidBody() error {
	return &provider.Error{Status: 400, Type: "invalid_request_error", Message: "request body is not a JSON object"}
}
