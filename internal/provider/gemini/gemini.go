// Package gemini adapts Google's Gemini API (generateContent and streamGenerateContent?alt=sse) to
// the gateway's OpenAI-shaped provider interface. It is a thin net/http client rather than the
// official SDK so the gateway keeps control of streaming, cancellation and allocation.
package gemini

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
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
	http   provider.HTTPCaller
	header http.Header // sent on every call
}

// New returns the adapter for one configured Gemini provider. A missing API key is not an error
// here: the provider answers every call with a final "not configured" error instead.
func New(cfg provider.Config) (provider.Provider, error) {
	a := &adapter{name: cfg.NameOr("gemini"), base: cfg.BaseURLOr(defaultBaseURL), key: cfg.APIKey}
	// The key travels in the x-goog-api-key header, never in the URL, so it cannot show up in a
	// logged URL or a transport error.
	a.header = http.Header{"X-Goog-Api-Key": {a.key}}
	a.http = provider.HTTPCaller{
		Client:      cfg.HTTPClient(),
		InvalidURL:  func(err error) *provider.Error { return provider.NotConfigured(a.name, "has an invalid base URL", err) },
		StatusError: a.statusError,
	}
	return &translate.Provider{Send: a.send, Translate: translateResponse, NewStream: a.newStream, MaxResponse: maxResponse}, nil
}

// send translates and posts the request; a failed answer comes back as a classified error.
func (a *adapter) send(ctx context.Context, req *provider.Request, stream bool) (*http.Response, error) {
	if a.key == "" {
		return nil, provider.NotConfigured(a.name, "has no credential configured", nil)
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
	return a.http.Post(ctx, u, body, a.header, req.OnSend)
}
