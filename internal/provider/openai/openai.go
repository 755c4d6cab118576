// Package openai adapts OpenAI Chat Completions and every server that speaks it (vLLM, Ollama,
// Groq, Together, OpenRouter…). The caller's request is already in this shape, so the body is
// passed through with surgical edits rather than decoded and re-encoded.
package openai

import (
	"context"
	"net/http"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/tidwall/gjson"
)

const defaultBaseURL = "https://api.openai.com/v1"

// maxResponse bounds a non-streamed answer read into memory.
const maxResponse = 32 << 20

// Provider calls one OpenAI-compatible endpoint.
type Provider struct {
	endpoint string
	// responses is the provider's Responses API, where /v1/responses requests pass through; ""
	// when it serves none (they are translated to Chat Completions).
	responses string
	http      provider.HTTPCaller
	// header and streamHeader are sent on every plain and streamed call.
	header, streamHeader http.Header
}

// New returns an adapter for cfg. An empty APIKey sends no Authorization header (local servers).
func New(cfg provider.Config) (provider.Provider, error) {
	p := &Provider{
		endpoint:     cfg.BaseURLOr(defaultBaseURL) + "/chat/completions",
		header:       http.Header{"Accept": {"application/json"}},
		streamHeader: http.Header{"Accept": {"text/event-stream"}},
		http: provider.HTTPCaller{
			Client: cfg.HTTPClient(),
			InvalidURL: func(err error) *provider.Error {
				return &provider.Error{Message: "invalid provider endpoint", Err: err}
			},
			StatusError: func(status int, raw []byte) *provider.Error {
				return statusError(cfg.NameOr("openai"), cfg.APIKey, status, raw)
			},
		},
	}
	if cfg.Responses {
		p.responses = cfg.BaseURLOr(defaultBaseURL) + "/responses"
	}
	if cfg.APIKey != "" {
		p.header.Set("Authorization", "Bearer "+cfg.APIKey)
		p.streamHeader.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	return p, nil
}

// Complete implements provider.Provider.
func (p *Provider) Complete(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	resp, err := p.send(ctx, req, false)
	if err != nil {
		return nil, err
	}
	body, err := provider.ReadBody(resp.Body, maxResponse)
	if err != nil {
		return nil, err
	}
	if p.native(req) {
		return nativeAnswer(body)
	}
	if !gjson.ValidBytes(body) || !gjson.GetBytes(body, "choices").IsArray() {
		return nil, &provider.Error{Reason: chain.ServerError, Status: resp.StatusCode, Message: "provider returned a malformed completion"}
	}
	u := gjson.GetBytes(body, "usage")
	return &provider.Response{Body: body, Usage: provider.Usage{
		PromptTokens:     int(u.Get("prompt_tokens").Int()),
		CompletionTokens: int(u.Get("completion_tokens").Int()),
	}}, nil
}

// Stream implements provider.Provider.
func (p *Provider) Stream(ctx context.Context, req *provider.Request) (provider.Stream, error) {
	resp, err := p.send(ctx, req, true)
	if err != nil {
		return nil, err
	}
	if p.native(req) {
		return nativeStream(ctx, resp.Body), nil
	}
	return newStream(resp.Body), nil
}

// native reports whether req is a Responses request this provider takes as it is.
func (p *Provider) native(req *provider.Request) bool {
	return p.responses != "" && req.NativeIn(provider.WireResponses)
}

func (p *Provider) send(ctx context.Context, req *provider.Request, stream bool) (*http.Response, error) {
	header := p.header
	if stream {
		header = p.streamHeader
	}
	if p.native(req) {
		return p.http.Post(ctx, p.responses, req.Native.NativeBody(req.Model, stream), header, req.OnSend)
	}
	body, err := upstreamBody(req, stream)
	if err != nil {
		return nil, err
	}
	return p.http.Post(ctx, p.endpoint, body, header, req.OnSend)
}
