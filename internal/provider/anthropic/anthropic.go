// Package anthropic adapts Anthropic's Messages API (/v1/messages) to the gateway's OpenAI-shaped
// provider interface. It is a thin net/http client rather than the official SDK so the gateway
// keeps control of streaming, cancellation and allocation on the hot path.
package anthropic

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/provider"
)

const (
	defaultBaseURL = "https://api.anthropic.com"
	apiVersion     = "2023-06-01"
	// maxResponse bounds a non-streamed answer read into memory.
	maxResponse = 16 << 20
)

type adapter struct {
	name   string
	url    string
	key    string
	client *http.Client
}

// New returns the adapter for one configured Anthropic provider. A missing API key is not an
// error here: the provider answers every call with a final "not configured" error instead, so one
// unconfigured provider never stops the gateway from starting.
func New(cfg provider.Config) (provider.Provider, error) {
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = defaultBaseURL
	}
	name := cfg.Name
	if name == "" {
		name = "anthropic"
	}
	client := cfg.Client
	if client == nil {
		client = provider.NewHTTPClient()
	}
	return &adapter{name: name, url: base + "/v1/messages", key: cfg.APIKey, client: client}, nil
}

func (a *adapter) Complete(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	resp, err := a.send(ctx, req, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, provider.TransportError(err)
	}
	return translateResponse(raw, req.Model, time.Now().Unix())
}

func (a *adapter) Stream(ctx context.Context, req *provider.Request) (provider.Stream, error) {
	resp, err := a.send(ctx, req, true)
	if err != nil {
		return nil, err
	}
	return a.newStream(ctx, resp.Body, req.Model, time.Now().Unix()), nil
}

// send translates and posts the request; a non-200 answer comes back as a classified error.
func (a *adapter) send(ctx context.Context, req *provider.Request, stream bool) (*http.Response, error) {
	if a.key == "" {
		return nil, &provider.Error{Status: 500, Type: "provider_not_configured", Message: "provider " + a.name + " has no credential configured"}
	}
	body, err := buildBody(req.Body, req.Model, stream)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return nil, &provider.Error{Status: 500, Type: "provider_not_configured", Message: "provider " + a.name + " has an invalid base URL", Err: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("X-Api-Key", a.key)
	hreq.Header.Set("Anthropic-Version", apiVersion)
	if stream {
		hreq.Header.Set("Accept", "text/event-stream")
	}
	resp, err := a.client.Do(hreq)
	if err != nil {
		return nil, provider.TransportError(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, a.statusError(resp)
	}
	return resp, nil
}
