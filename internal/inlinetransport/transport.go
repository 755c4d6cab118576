// Package inlinetransport is an HTTP/1.1 client transport that runs each exchange in the calling
// goroutine: it writes the request and reads the response on a pooled connection itself.
//
// net/http's Transport hands every request to a connection's write loop and the response back
// from its read loop: two goroutine hand-offs per call, each of which may wake a sleeping thread
// on another CPU. On the gateway's path, where the upstream call is most of the work it adds,
// those wakes were ~40 µs of a ~320 µs sequential request (docs/benchmarks.md). The HTTP itself
// stays net/http's: requests are written by http.Request.Write and responses parsed by
// http.ReadResponse; this package only owns the connections. A request through a proxy, or of a
// scheme other than http and https, goes to the fallback transport.
package inlinetransport

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"time"
)

// Transport is an http.RoundTripper; its zero value is not usable, use New.
type Transport struct {
	// Fallback serves what this transport does not: requests that go through a proxy and
	// schemes other than http and https.
	Fallback http.RoundTripper
	// Proxy says which requests go through a proxy (http.ProxyFromEnvironment by default); a
	// request it gives a proxy for goes to Fallback.
	Proxy func(*http.Request) (*url.URL, error)
	// TLSClientConfig is the base of every https connection's configuration (nil: the system's
	// roots); its ServerName and NextProtos are set per connection.
	TLSClientConfig *tls.Config
	// DialTimeout bounds connecting, TLSHandshakeTimeout the TLS handshake: a connection that
	// cannot be made in time is a net.Error whose Timeout() is true, not the request's deadline.
	DialTimeout         time.Duration
	TLSHandshakeTimeout time.Duration
	// IdleConnTimeout is how long an unused connection stays open (0: no limit);
	// MaxIdleConnsPerHost how many are kept per scheme and host.
	IdleConnTimeout     time.Duration
	MaxIdleConnsPerHost int

	mu     sync.Mutex
	idle   map[poolKey][]*conn
	pruner *time.Timer
}

// New returns a Transport with net/http's default limits, falling back to fallback.
func New(fallback http.RoundTripper) *Transport {
	return &Transport{
		Fallback:            fallback,
		Proxy:               http.ProxyFromEnvironment,
		DialTimeout:         30 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		MaxIdleConnsPerHost: 256,
	}
}

// errNoHost is net/http's own error for the same mistake.
var errNoHost = errors.New("http: no Host in request URL")

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("http: nil Request.URL")
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return t.Fallback.RoundTrip(req)
	}
	if t.Proxy != nil {
		proxy, err := t.Proxy(req)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		if proxy != nil {
			return t.Fallback.RoundTrip(req)
		}
	}
	if req.URL.Host == "" {
		closeBody(req)
		return nil, errNoHost
	}
	ctx := req.Context()
	key := keyOf(req.URL)
	// A request traced with net/http/httptrace (X-Ray's client is) sees the connection events
	// net/http's transport reports; the dialer and http.Request.Write report their own.
	trace := httptrace.ContextClientTrace(ctx)
	for retried := false; ; retried = true {
		if err := ctx.Err(); err != nil {
			closeBody(req)
			return nil, err
		}
		c, err := t.conn(ctx, key, trace)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := c.exchange(ctx, req, trace)
		if err == nil {
			return resp, nil
		}
		if retried || !c.reused || !retryable(req, err) {
			return nil, err
		}
		// A kept connection the server had already closed: net/http's rule for sending the
		// request again on a new one.
		if req, err = rewound(req); err != nil {
			return nil, err
		}
	}
}

// CloseIdleConnections closes the connections kept for reuse, here and in the fallback.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, l := range idle {
		for _, c := range l {
			c.nc.Close()
		}
	}
	if ci, ok := t.Fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// nothingWritten is a failure to send a request of which no byte reached the connection.
type nothingWritten struct{ error }

func (e nothingWritten) Unwrap() error { return e.error }

// noResponse is a connection that ended or failed before the first byte of a response.
type noResponse struct{ error }

func (e noResponse) Unwrap() error { return e.error }

// retryable is net/http's Transport.shouldRetryRequest for a kept connection: a request none of
// which was written may go again if its body can be read again; one the server closed the
// connection on before answering, only if it is idempotent (or carries an Idempotency-Key), since
// the server may have acted on it.
func retryable(req *http.Request, err error) bool {
	var nw nothingWritten
	if errors.As(err, &nw) {
		return rewindable(req)
	}
	var nr noResponse
	if !errors.As(err, &nr) || !rewindable(req) {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != ""
}

func bodiless(req *http.Request) bool { return req.Body == nil || req.Body == http.NoBody }

// rewindable says whether req can be written again: it has no body, or a way to get it afresh.
func rewindable(req *http.Request) bool { return bodiless(req) || req.GetBody != nil }

// rewound is req with a fresh copy of its body.
func rewound(req *http.Request) (*http.Request, error) {
	if bodiless(req) {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := *req
	r.Body = body
	return &r, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// ctxErr is the request context's error when it ended the exchange (its cancellation closes the
// connection under the read or write, whose own error says only that), else err.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}
