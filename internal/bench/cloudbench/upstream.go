package cloudbench

import (
	"io"
	"net"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/bench/latencybench"
	"github.com/tidwall/gjson"
)

// Upstream is latencybench's zero-delay fake OpenAI upstream that records each attempt: the
// upstream model asked for, when the request arrived and when the handler had written its answer.
type Upstream struct {
	URL string // http://127.0.0.1:port, the catalog provider's base URL without /v1
	rec recorder
	srv *http.Server
}

// StartUpstream starts the recording upstream on a loopback port.
func StartUpstream() (*Upstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &Upstream{URL: "http://" + ln.Addr().String()}
	inner := latencybench.Upstream{}
	u.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrive := time.Now()
		body := &peekBody{ReadCloser: r.Body}
		r.Body = body
		inner.ServeHTTP(w, r)
		u.rec.add(Span{Op: gjson.GetBytes(body.head, "model").Str, Arrive: arrive, Answer: time.Now()})
	})}
	go func() { _ = u.srv.Serve(ln) }()
	return u, nil
}

// Take returns the attempts recorded so far and forgets them.
func (u *Upstream) Take() []Span { return u.rec.take() }

// Close stops the upstream.
func (u *Upstream) Close() { _ = u.srv.Close() }

// peekBody keeps the first bytes read through it (the model name is near the start).
type peekBody struct {
	io.ReadCloser
	head []byte
}

func (b *peekBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if len(b.head) < 16<<10 {
		b.head = append(b.head, p[:n]...)
	}
	return n, err
}
