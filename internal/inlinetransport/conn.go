package inlinetransport

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"time"

	"golang.org/x/net/http/httpguts"
)

// conn is one connection to a scheme and host, used by one exchange at a time.
type conn struct {
	t       *Transport
	key     poolKey
	nc      net.Conn
	br      *bufio.Reader
	bw      *bufio.Writer
	written int64 // bytes that reached nc since the exchange began
	werr    error // nc's own write error in this exchange, if it had one
	unread  int64 // bytes the reader may still take from nc: bounds a response's head
	reused  bool
	idleAt  time.Time
}

// Write counts what reaches the connection, so a failed send knows whether any of it did.
func (c *conn) Write(p []byte) (int, error) {
	n, err := c.nc.Write(p)
	c.written += int64(n)
	if err != nil {
		c.werr = err
	}
	return n, err
}

// Read reads from nc, no more than unread allows.
func (c *conn) Read(p []byte) (int, error) {
	if c.unread <= 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > c.unread {
		p = p[:c.unread]
	}
	n, err := c.nc.Read(p)
	c.unread -= int64(n)
	return n, err
}

// maxHeadBytes bounds a response's status line and headers, as net/http's transport does (its
// default is 10 MiB; a provider's are a few KiB).
const maxHeadBytes = 1 << 20

var errHeadTooLarge = errors.New("the response's headers are larger than 1 MiB")

// exchange writes req and reads its response's head; the response's body reads on the
// connection, which goes back to the pool when the body has been read to its end.
func (c *conn) exchange(ctx context.Context, req *http.Request, trace *httptrace.ClientTrace) (*http.Response, error) {
	// Cancelling the request fails the read or write in progress; the connection is not kept.
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		c.end(stop, false)
		return nil, ctxErr(ctx, err)
	}
	c.written, c.werr = 0, nil
	err := req.Write(c.bw)
	if err == nil {
		err = c.bw.Flush()
	}
	keep := true
	switch {
	case err == nil:
	case c.written == 0:
		return fail(nothingWritten{err})
	case c.werr == nil:
		// The body failed (its reader, or fewer bytes than its length): the server still waits
		// for the rest, and the error is the body's.
		return fail(err)
	default:
		// The connection failed part way. A server may answer before it has read the whole
		// request (a 413 for a body too large) and close: that answer, when it came, is the one
		// to give.
		keep = false
	}
	resp, rerr := c.readHead(req, trace)
	if rerr != nil {
		return fail(cmp.Or(err, rerr))
	}
	keep = keep && !resp.Close && !wantsClose(req) && resp.StatusCode != http.StatusSwitchingProtocols
	if resp.Body == http.NoBody { // HEAD, 204, 304, Content-Length: 0: the exchange is over
		c.end(stop, keep)
		return resp, nil
	}
	resp.Body = &body{rc: resp.Body, c: c, ctx: ctx, stop: stop, keep: keep}
	return resp, nil
}

// end ends an exchange: the connection goes back to the pool when reuse allows it and the
// request's cancellation (which stop unregisters) has not fired, and is closed otherwise.
func (c *conn) end(stop func() bool, reuse bool) {
	if stop() && reuse {
		c.t.put(c)
		return
	}
	c.nc.Close()
}

// wantsClose is net/http's Request.wantsClose: the request asked for its connection to close.
func wantsClose(req *http.Request) bool {
	return req.Close || httpguts.HeaderValuesContainsToken(req.Header["Connection"], "close")
}

// readHead reads the response's status line and headers, skipping interim (1xx) answers.
func (c *conn) readHead(req *http.Request, trace *httptrace.ClientTrace) (*http.Response, error) {
	c.unread = maxHeadBytes
	if _, err := c.br.Peek(1); err != nil {
		return nil, noResponse{err}
	}
	if trace != nil && trace.GotFirstResponseByte != nil {
		trace.GotFirstResponseByte()
	}
	for {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, err
		}
		// 1xx answers are interim (a 100 Continue the request did not ask for, a 103 Early
		// Hints): the final one follows. 101 would switch protocols, which nothing here asks
		// for: it is returned, and its connection not kept.
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		c.unread = math.MaxInt64
		if tc, ok := c.nc.(*tls.Conn); ok {
			state := tc.ConnectionState()
			resp.TLS = &state
		}
		return resp, nil
	}
}

// aLongTimeAgo is a deadline that has passed: setting it fails pending I/O at once.
var aLongTimeAgo = time.Unix(1, 0)

// poolKey is where a connection goes: the scheme and the host with its port.
type poolKey struct{ scheme, addr string }

func keyOf(u *url.URL) poolKey {
	if u.Port() != "" {
		return poolKey{u.Scheme, u.Host} // already host:port, bracketed if IPv6
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return poolKey{u.Scheme, net.JoinHostPort(u.Hostname(), port)}
}

// conn is a kept connection to key that is still open, or a new one.
func (t *Transport) conn(ctx context.Context, key poolKey, trace *httptrace.ClientTrace) (*conn, error) {
	if trace != nil && trace.GetConn != nil {
		trace.GetConn(key.addr)
	}
	c, err := t.open(ctx, key, trace)
	if err == nil && trace != nil && trace.GotConn != nil {
		info := httptrace.GotConnInfo{Conn: c.nc, Reused: c.reused, WasIdle: c.reused}
		if c.reused {
			info.IdleTime = time.Since(c.idleAt)
		}
		trace.GotConn(info)
	}
	return c, err
}

func (t *Transport) open(ctx context.Context, key poolKey, trace *httptrace.ClientTrace) (*conn, error) {
	for {
		c := t.takeIdle(key)
		if c == nil {
			return t.dial(ctx, key, trace)
		}
		// A server closes idle connections when it likes; one it closed (or that has bytes
		// nobody asked for) is dropped here rather than failing the request sent on it.
		if !t.expired(c) && c.idleAndClean() {
			c.reused = true
			return c, nil
		}
		c.nc.Close()
	}
}

// idleAndClean says whether a kept connection has nothing to read: neither in the reader's buffer,
// nor in TLS records already taken from the socket, nor in the socket (alive).
func (c *conn) idleAndClean() bool {
	if c.br.Buffered() != 0 || !alive(c.nc) {
		return false
	}
	if _, ok := c.nc.(*tls.Conn); !ok {
		return true
	}
	// A read past its deadline does not touch the socket: it ends at once with
	// ErrDeadlineExceeded unless TLS holds a record's plaintext (or its end, close_notify).
	c.nc.SetReadDeadline(aLongTimeAgo)
	_, err := c.br.Peek(1)
	c.nc.SetReadDeadline(time.Time{})
	return errors.Is(err, os.ErrDeadlineExceeded)
}

func (t *Transport) takeIdle(key poolKey) *conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.idle[key]
	if len(l) == 0 {
		return nil
	}
	c := l[len(l)-1] // the most recently used: the least likely to have been closed
	l[len(l)-1] = nil
	t.idle[key] = l[:len(l)-1]
	return c
}

// put keeps c for the next request to its host, or closes it when the host has enough.
func (t *Transport) put(c *conn) {
	c.idleAt = time.Now()
	t.mu.Lock()
	if t.idle == nil {
		t.idle = map[poolKey][]*conn{}
	}
	l := t.idle[c.key]
	if len(l) >= t.MaxIdleConnsPerHost {
		t.mu.Unlock()
		c.nc.Close()
		return
	}
	t.idle[c.key] = append(l, c)
	if t.pruner == nil && t.IdleConnTimeout > 0 {
		t.pruner = time.AfterFunc(t.IdleConnTimeout, t.prune)
	}
	t.mu.Unlock()
}

func (t *Transport) expired(c *conn) bool {
	return t.IdleConnTimeout > 0 && time.Since(c.idleAt) >= t.IdleConnTimeout
}

// prune closes the connections idle for longer than IdleConnTimeout, and runs again while any
// are kept.
func (t *Transport) prune() {
	var expired []*conn
	t.mu.Lock()
	for key, l := range t.idle {
		kept := l[:0]
		for _, c := range l {
			if t.expired(c) {
				expired = append(expired, c)
			} else {
				kept = append(kept, c)
			}
		}
		clear(l[len(kept):])
		if len(kept) == 0 {
			delete(t.idle, key)
		} else {
			t.idle[key] = kept
		}
	}
	if len(t.idle) > 0 {
		t.pruner.Reset(t.IdleConnTimeout / 2)
	} else {
		t.pruner = nil
	}
	t.mu.Unlock()
	for _, c := range expired {
		c.nc.Close()
	}
}

// dial opens a connection to key: TCP, then TLS for https, each within its own time limit.
func (t *Transport) dial(ctx context.Context, key poolKey, trace *httptrace.ClientTrace) (*conn, error) {
	d := net.Dialer{Timeout: t.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", key.addr)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	if key.scheme == "https" {
		if nc, err = t.handshake(ctx, nc, key.addr, trace); err != nil {
			return nil, err
		}
	}
	c := &conn{t: t, key: key, nc: nc}
	c.br = bufio.NewReaderSize(c, 4<<10)
	c.bw = bufio.NewWriterSize(c, 4<<10)
	return c, nil
}

func (t *Transport) handshake(ctx context.Context, nc net.Conn, addr string, trace *httptrace.ClientTrace) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(addr)
	cfg := &tls.Config{}
	if t.TLSClientConfig != nil {
		cfg = t.TLSClientConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	cfg.NextProtos = []string{"http/1.1"}
	tc := tls.Client(nc, cfg)
	// The handshake's limit is a deadline on the connection, so passing it is a connection
	// that could not be made (a net.Error timeout), not the request's context ending.
	if t.TLSHandshakeTimeout > 0 {
		tc.SetDeadline(time.Now().Add(t.TLSHandshakeTimeout))
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(aLongTimeAgo) })
	if trace != nil && trace.TLSHandshakeStart != nil {
		trace.TLSHandshakeStart()
	}
	err := tc.Handshake()
	if trace != nil && trace.TLSHandshakeDone != nil {
		trace.TLSHandshakeDone(tc.ConnectionState(), err)
	}
	if !stop() || err != nil {
		nc.Close()
		return nil, ctxErr(ctx, err)
	}
	tc.SetDeadline(time.Time{})
	return tc, nil
}
