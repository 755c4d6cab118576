// Package anthropic adapts Anthropic's Messages API (/v1/messages) to the gateway's OpenAI-shaped
// provider interface. It is a thin net/http client rather than the official SDK so the gateway
// keeps control of streaming, cancellation and allocation on the hot path.
package anthropic

import (
	"context"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

const (
	defaultBaseURL = "https://api.anthropic.com"
	apiVersion     = "2023-06-01"
	// maxResponse bounds a non-streamed answer read into memory.
	maxResponse = 16 << 20
)

type adapter struct {
	name string
	url  string
	key  string
	http provider.HTTPCaller
	// header and streamHeader are sent on every plain and streamed call.
	header, streamHeader http.Header
}

// New returns the adapter for one configured Anthropic provider. A missing API key is not an
// error here: the provider answers every call with a final "not configured" error instead, so one
// unconfigured provider never stops the gateway from starting.
func New(cfg provider.Config) (provider.Provider, error) {
	a := &adapter{name: cfg.NameOr("anthropic"), url: cfg.BaseURLOr(defaultBaseURL) + "/v1/messages", key: cfg.APIKey}
	a.header = http.Header{"X-Api-Key": {a.key}, "Anthropic-Version": {apiVersion}}
	a.streamHeader = http.Header{"X-Api-Key": {a.key}, "Anthropic-Version": {apiVersion}, "Accept": {"text/event-stream"}}
	a.http = provider.HTTPCaller{
		Client:     cfg.HTTPClient(),
		InvalidURL: func(err error) *provider.Error { return provider.NotConfigured(a.name, "has an invalid base URL", err) },
		StatusError: func(status int, body []byte) *provider.Error {
			// Anthropic's error body is {"type":"error","error":{"type":…,"message":…}}.
			e := gjson.GetBytes(body, "error")
			return a.apiError(status, e.Get("type").String(), e.Get("message").String())
		},
	}
	return &translate.Provider{Send: a.send, Translate: translateResponse, NewStream: a.newStream, MaxResponse: maxResponse,
		Native: provider.WireMessages, NativeAnswer: nativeAnswer, NativeStream: a.nativeStream}, nil
}

// send translates and posts the request; a failed answer comes back as a classified error.
func (a *adapter) send(ctx context.Context, req *provider.Request, stream bool) (*http.Response, error) {
	if a.key == "" {
		return nil, provider.NotConfigured(a.name, "has no credential configured", nil)
	}
	header := a.header
	if stream {
		header = a.streamHeader
	}
	if req.NativeIn(provider.WireMessages) {
		// A Messages request passes through: the caller's bytes, and the betas its shape needs.
		if b := req.Native.Beta; b != "" {
			header = header.Clone()
			header.Set("Anthropic-Beta", b)
		}
		return a.http.Post(ctx, a.url, req.Native.NativeBody(req.Model, stream), header, req.OnSend)
	}
	body, err := buildBody(req.Body, req.Model, stream)
	if err != nil {
		return nil, err
	}
	return a.http.Post(ctx, a.url, body, header, req.OnSend)
}
