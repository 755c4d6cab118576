package provider

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// maxErrorBody bounds how much of a failed answer is read to classify it.
const maxErrorBody = 64 << 10

// HTTPCaller posts JSON requests to one HTTP provider and classifies every way that can fail, so
// an adapter only says how its own error body reads.
type HTTPCaller struct {
	Client *http.Client
	// InvalidURL is the error for an endpoint net/http cannot make a request of: the catalog's
	// base URL is wrong, which no other model of the chain can fix.
	InvalidURL func(err error) *Error
	// StatusError classifies a non-2xx answer from its status and the start of its body. A
	// Retry-After header, when the answer has one, replaces the RetryAfter it sets.
	StatusError func(status int, body []byte) *Error
}

// Post sends body to url with the Content-Type of JSON and header's fields, which are copied so
// an adapter may keep one header for all its calls. onSend, when not nil, sees body first and may
// add fields or refuse (see SendHook). It returns a 2xx response, whose body the caller owns, or
// a classified error.
func (c *HTTPCaller) Post(ctx context.Context, url string, body []byte, header http.Header, onSend SendHook) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, c.InvalidURL(err)
	}
	for k, v := range header {
		hr.Header[k] = v
	}
	if onSend != nil {
		extra, err := onSend.Call(ctx, body)
		if err != nil {
			return nil, err
		}
		for k, v := range extra {
			hr.Header[http.CanonicalHeaderKey(k)] = v
		}
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.Client.Do(hr)
	if err != nil {
		return nil, TransportError(err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		e := c.StatusError(resp.StatusCode, raw)
		if d := RetryAfter(resp.Header, time.Now()); d != 0 {
			e.RetryAfter = d
		}
		return nil, e
	}
	return resp, nil
}

// ReadBody reads a whole non-streamed answer, at most limit bytes, and closes it. A connection
// lost part way comes back classified.
func ReadBody(body io.ReadCloser, limit int64) ([]byte, error) {
	defer body.Close()
	raw, err := io.ReadAll(io.LimitReader(body, limit))
	if err != nil {
		return nil, TransportError(err)
	}
	return raw, nil
}
