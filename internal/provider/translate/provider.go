package translate

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/provider"
)

// Provider is the call flow of an adapter that translates to its provider's own HTTP wire
// format: send the translated request, then translate the whole answer back or stream it. The
// adapter supplies the three provider-specific steps.
type Provider struct {
	// Send translates req and posts it, returning a successful answer or a classified error.
	Send func(ctx context.Context, req *provider.Request, stream bool) (*http.Response, error)
	// Translate turns a whole answer into a chat.completion; created is its timestamp.
	Translate func(raw []byte, model string, created int64) (*provider.Response, error)
	// NewStream reads a streamed answer's body as chat.completion.chunk objects.
	NewStream func(ctx context.Context, body io.ReadCloser, model string, created int64) provider.Stream
	// MaxResponse bounds a non-streamed answer read into memory.
	MaxResponse int64

	// Native, when set, is the wire the provider speaks itself: a request carrying it in
	// Request.Native is passed through (Send sends Native's body) and its answer is the
	// provider's own, read by NativeAnswer and NativeStream instead of being translated.
	Native       provider.Wire
	NativeAnswer func(raw []byte) (*provider.Response, error)
	NativeStream func(ctx context.Context, body io.ReadCloser) provider.Stream
}

// Complete implements provider.Provider.
func (t *Provider) Complete(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	resp, err := t.Send(ctx, req, false)
	if err != nil {
		return nil, err
	}
	raw, err := provider.ReadBody(resp.Body, t.MaxResponse)
	if err != nil {
		return nil, err
	}
	if t.Native != "" && req.NativeIn(t.Native) {
		return t.NativeAnswer(raw)
	}
	return t.Translate(raw, req.Model, time.Now().Unix())
}

// Stream implements provider.Provider.
func (t *Provider) Stream(ctx context.Context, req *provider.Request) (provider.Stream, error) {
	resp, err := t.Send(ctx, req, true)
	if err != nil {
		return nil, err
	}
	if t.Native != "" && req.NativeIn(t.Native) {
		return t.NativeStream(ctx, resp.Body), nil
	}
	return t.NewStream(ctx, resp.Body, req.Model, time.Now().Unix()), nil
}
