package provider

import (
	"context"
	"io"
	"net/http"
	"time"
)

// Translating is the call flow of an adapter that translates to its provider's own HTTP wire
// format: send the translated request, then translate the whole answer back or stream it. The
// adapter supplies the three provider-specific steps.
type Translating struct {
	// Send translates req and posts it, returning a successful answer or a classified error.
	Send func(ctx context.Context, req *Request, stream bool) (*http.Response, error)
	// Translate turns a whole answer into a chat.completion; created is its timestamp.
	Translate func(raw []byte, model string, created int64) (*Response, error)
	// NewStream reads a streamed answer's body as chat.completion.chunk objects.
	NewStream func(ctx context.Context, body io.ReadCloser, model string, created int64) Stream
	// MaxResponse bounds a non-streamed answer read into memory.
	MaxResponse int64
}

// Complete implements Provider.
func (t *Translating) Complete(ctx context.Context, req *Request) (*Response, error) {
	resp, err := t.Send(ctx, req, false)
	if err != nil {
		return nil, err
	}
	raw, err := ReadBody(resp.Body, t.MaxResponse)
	if err != nil {
		return nil, err
	}
	return t.Translate(raw, req.Model, time.Now().Unix())
}

// Stream implements Provider.
func (t *Translating) Stream(ctx context.Context, req *Request) (Stream, error) {
	resp, err := t.Send(ctx, req, true)
	if err != nil {
		return nil, err
	}
	return t.NewStream(ctx, resp.Body, req.Model, time.Now().Unix()), nil
}
