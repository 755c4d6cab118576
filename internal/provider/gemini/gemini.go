// Package gemini adapts Google's Gemini API (generateContent and streamGenerateContent?alt=sse) to
// the gateway's OpenAI-shaped provider interface. It is a thin net/http client rather than the
// official SDK so the gateway keeps control of streaming, cancellation and allocation.
package gemini

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/provider"
)

const (
	defaultBaseURL = "https://generativelanguage.googleapis.com"
	// maxResponse bounds a non-streamed answer read into memory.
	maxResponse = 16 << 20
)

type adapter struct {
	name   string
	base   string
	key    string
	client *http.Client
}

// New returns the adapter for one configured Gemini provider. A missing API key is not an error
// here: the provider answers every call with a final "not configured" error instead.
func New(cfg provider.Config) (provider.Provider, error) {
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = defaultBaseURL
	}
	name := cfg.Name
	if name == "" {
		name = "gemini"
	}
	client := cfg.Client
	if client == nil {
		client = provider.NewHTTPClient()
	}
	return &adapter{name: name, base: base, key: cfg.APIKey, client: client}, nil
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

// send translates and posts the request. The key travels in the x-goog-api-key header, never in
// the URL, so it cannot show up in a logged URL or a transport error.
func (a *adapter) send(ctx context.Context, req *provider.Request, stream bool) (*http.Response, error) {
	if a.key == "" {
		return nil, &provider.Error{Status: 500, Type: "provider_not_configured", Message: "provider " + a.name + " has no credential configured"}
	}
	body, err := buildBody(req.Body)
	if err != nil {
		return nil, err
	}
	u := a.base + "/v1beta/models/" + url.PathEscape(strings.TrimPrefix(req.Model, "models/"))
	if stream {
		u += ":streamGenerateContent?alt=sse"
	} else {
		u += ":generateContent"
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, &provider.Error{Status: 500, Type: "provider_not_configured", Message: "provider " + a.name + " has an invalid base URL", Err: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("X-Goog-Api-Key", a.key)
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
