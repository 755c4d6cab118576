package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/inlinetransport"
)

// ReasonForStatus maps an upstream HTTP status to a failover reason; "" means final.
// Anthropic's 529 (overloaded) is a 5xx like any other.
func ReasonForStatus(status int) chain.Reason {
	switch {
	case status == http.StatusTooManyRequests:
		return chain.RateLimit
	case status >= 500:
		return chain.ServerError
	}
	return ""
}

// TransportError classifies an error from sending a request or reading a response body: a
// refused, reset or lost connection, DNS or TLS failure. Context cancellation is returned as is,
// because the chain engine decides whether that was the attempt's timeout or the caller leaving.
func TransportError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// A net.Error timeout here is the transport's own dial or TLS handshake limit (no other
	// deadline is set on connections): a connection that could not be made, not the attempt
	// passing its timeout_ms, which only the engine's timer decides.
	msg := "connection to provider failed"
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		msg = "connection to provider lost before the response was complete"
	}
	return &Error{Reason: chain.ConnectionError, Message: msg, Err: err}
}

// RetryAfter parses a Retry-After header given in seconds or as an HTTP date.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// NewHTTPClient returns the client an adapter keeps for its whole life: one pooled transport,
// keep-alive connections reused across requests, no overall timeout (the chain engine owns
// deadlines through the request context). Calls go over HTTP/1.1 in the caller's goroutine
// (inlinetransport, for the latency it saves); a call through a proxy goes through net/http's
// transport, with HTTP/2 where the proxy's far side offers it.
func NewHTTPClient() *http.Client {
	proxied := http.DefaultTransport.(*http.Transport).Clone()
	proxied.MaxIdleConns = 512
	proxied.MaxIdleConnsPerHost = 256
	proxied.IdleConnTimeout = 90 * time.Second
	proxied.ForceAttemptHTTP2 = true
	return &http.Client{Transport: inlinetransport.New(proxied)}
}
