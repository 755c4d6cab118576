// Package openai adapts OpenAI Chat Completions and every server that speaks it (vLLM, Ollama,
// Groq, Together, OpenRouter…). The caller's request is already in this shape, so the body is
// passed through with surgical edits rather than decoded and re-encoded.
package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"

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
	auth     string
	client   *http.Client
}

// New returns an adapter for cfg. An empty APIKey sends no Authorization header (local servers).
func New(cfg provider.Config) (provider.Provider, error) {
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = defaultBaseURL
	}
	p := &Provider{endpoint: base + "/chat/completions", client: cfg.Client}
	if cfg.APIKey != "" {
		p.auth = "Bearer " + cfg.APIKey
	}
	if p.client == nil {
		p.client = provider.NewHTTPClient()
	}
	return p, nil
}

// Complete implements provider.Provider.
func (p *Provider) Complete(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	resp, err := p.send(ctx, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, provider.TransportError(err)
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
	resp, err := p.send(ctx, req)
	if err != nil {
		return nil, err
	}
	return newStream(resp.Body), nil
}

func (p *Provider) send(ctx context.Context, req *provider.Request) (*http.Response, error) {
	body, err := upstreamBody(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &provider.Error{Message: "invalid provider endpoint", Err: err}
	}
	hr.Header.Set("Content-Type", "application/json")
	if req.Stream {
		hr.Header.Set("Accept", "text/event-stream")
	} else {
		hr.Header.Set("Accept", "application/json")
	}
	if p.auth != "" {
		hr.Header.Set("Authorization", p.auth)
	}
	resp, err := p.client.Do(hr)
	if err != nil {
		return nil, provider.TransportError(err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, statusError(resp)
	}
	return resp, nil
}
