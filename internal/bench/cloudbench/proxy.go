package cloudbench

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// DelayProxy forwards every AWS call to moto after holding it for Delay, like a network round
// trip of that length, and records each call: its operation, what it touched, when it arrived and
// when its answer was written.
type DelayProxy struct {
	URL   string // http://127.0.0.1:port, the function's AWS_ENDPOINT_URL
	delay atomic.Int64
	rec   recorder
	srv   *http.Server
}

// StartDelayProxy starts a proxy to target (moto) on a loopback port.
func StartDelayProxy(target string) (*DelayProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &DelayProxy{URL: "http://" + ln.Addr().String()}
	forward := httputil.NewSingleHostReverseProxy(u)
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrive := time.Now()
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		op := Operation(r.Header, r.URL.RawQuery, body)
		if op == "" {
			op = r.Method + " " + r.URL.Path
		}
		if d := time.Duration(p.delay.Load()); d > 0 {
			time.Sleep(d - time.Since(arrive)) // reading the body counts towards the delay
		}
		held := time.Since(arrive)
		forward.ServeHTTP(w, r)
		p.rec.add(Span{Op: op, Detail: strings.Join(Resources(body), " "), Arrive: arrive, Answer: time.Now(), Held: held})
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// SetDelay sets the delay of every call from now on.
func (p *DelayProxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Take returns the calls recorded so far and forgets them.
func (p *DelayProxy) Take() []Span { return p.rec.take() }

// Close stops the proxy.
func (p *DelayProxy) Close() { _ = p.srv.Close() }
