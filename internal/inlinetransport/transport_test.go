package inlinetransport

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer is an httptest server that counts the connections opened to it.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	srv, conns := unstartedCountingServer(t, h)
	srv.Start()
	return srv, conns
}

func unstartedCountingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	t.Cleanup(srv.Close)
	return srv, &conns
}

func newTransport() *Transport {
	return New(failingFallback{})
}

// failingFallback is the fallback of a test that must not reach it.
type failingFallback struct{}

func (failingFallback) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("the fallback transport was used")
}

func post(t *testing.T, tr http.RoundTripper, ctx context.Context, u, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return tr.RoundTrip(req)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSequentialRequestsShareOneConnection(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Query().Has("chunked") {
			w.(http.Flusher).Flush() // no Content-Length: the answer is chunked
		}
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, b)
	})
	tr := newTransport()
	for i, q := range []string{"", "?chunked", "", "?chunked", ""} {
		resp, err := post(t, tr, context.Background(), srv.URL+"/v1/x"+q, fmt.Sprint("body ", i))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got, want := readAll(t, resp), fmt.Sprint("POST /v1/x body ", i); resp.StatusCode != 200 || got != want {
			t.Fatalf("request %d: %d %q, want 200 %q", i, resp.StatusCode, got, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 5 sequential requests, want 1", n)
	}
}

func TestConcurrentRequestsEachGetAConnection(t *testing.T) {
	release := make(chan struct{})
	var inflight atomic.Int32
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if inflight.Add(1) == 3 {
			close(release)
		}
		<-release // answers only once all three are in: they must be on three connections
		io.WriteString(w, r.URL.Path)
	})
	tr := newTransport()
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			resp, err := post(t, tr, context.Background(), fmt.Sprint(srv.URL, "/", i), "")
			if err != nil {
				t.Error(err)
				return
			}
			if got := readAll(t, resp); got != fmt.Sprint("/", i) {
				t.Errorf("request %d read %q", i, got)
			}
		})
	}
	wg.Wait()
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3", n)
	}
}

func TestAStreamedBodyIsReadAsItArrives(t *testing.T) {
	next := make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-next
		io.WriteString(w, "data: two\n\n")
	})
	resp, err := post(t, newTransport(), context.Background(), srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("data: one\n\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "data: one\n\n" {
		t.Fatalf("first frame %q, %v", first, err) // read while the server still holds the second
	}
	close(next)
	if rest := readAll(t, resp); rest != "data: two\n\n" {
		t.Fatalf("rest %q", rest)
	}
}

func TestCancellingTheRequestEndsItAndDropsTheConnection(t *testing.T) {
	started := make(chan struct{}, 4)
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			return
		}
		if r.URL.Path == "/body" {
			w.(http.Flusher).Flush()
		}
		started <- struct{}{}
		<-r.Context().Done()
	})
	tr := newTransport()

	t.Run("waiting for the answer", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		if _, err := post(t, tr, ctx, srv.URL+"/head", ""); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("reading the body", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := post(t, tr, ctx, srv.URL+"/body", "")
		if err != nil {
			t.Fatal(err)
		}
		<-started
		cancel()
		if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("its deadline passing", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := post(t, tr, ctx, srv.URL+"/head", ""); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
	})
	before := conns.Load()
	resp, err := post(t, tr, context.Background(), srv.URL+"/ok", "")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if conns.Load() != before+1 {
		t.Errorf("a request after the cancelled ones reused a connection they had left mid-exchange")
	}
}

func TestABodyClosedBeforeItsEndDropsTheConnection(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 64<<10))
	})
	tr := newTransport()
	resp, err := post(t, tr, context.Background(), srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resp.Body.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = post(t, tr, context.Background(), srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); len(got) != 64<<10 {
		t.Fatalf("read %d bytes", len(got))
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the unread rest of the first answer is still on the first", n)
	}
}

// rawServer accepts connections and gives each, with its number from 0, to serve.
func rawServer(t *testing.T, serve func(n int, c net.Conn, r *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(n, c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

const okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

func TestAnIdleConnectionTheServerClosedIsNotUsed(t *testing.T) {
	closed := make(chan struct{})
	u := rawServer(t, func(n int, c net.Conn, r *bufio.Reader) {
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, okAnswer) // keep-alive, and then closed anyway
		if n == 0 {
			c.Close()
			close(closed)
		}
	})
	tr := newTransport()
	for i := range 2 {
		resp, err := post(t, tr, context.Background(), u, "not idempotent")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got := readAll(t, resp); got != "ok" {
			t.Fatalf("request %d read %q", i, got)
		}
		<-closed
	}
}

// A kept connection the server closes after reading the request and before answering: sent
// again on a new connection only when that cannot do a second time what the first did.
func TestARequestTheServerDroppedIsSentAgainOnlyWhenIdempotent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		header string
		again  bool
	}{
		{"GET", http.MethodGet, "", true},
		{"POST", http.MethodPost, "", false},
		{"POST with an Idempotency-Key", http.MethodPost, "Idempotency-Key", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen atomic.Int32 // copies of the second request the server read
			u := rawServer(t, func(n int, c net.Conn, r *bufio.Reader) {
				for i := 0; ; i++ {
					req, err := http.ReadRequest(r)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if req.URL.Path == "/second" {
						seen.Add(1)
						if n == 0 {
							return // read, then hung up on
						}
					}
					io.WriteString(c, okAnswer)
				}
			})
			tr := newTransport()
			send := func(path string) (*http.Response, error) {
				req, _ := http.NewRequest(tc.method, u+path, bytes.NewReader([]byte("{}")))
				if tc.header != "" {
					req.Header.Set(tc.header, "k1")
				}
				return tr.RoundTrip(req)
			}
			resp, err := send("/first")
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			resp, err = send("/second")
			if tc.again {
				if err != nil {
					t.Fatalf("err = %v, want it sent again and answered", err)
				}
				readAll(t, resp)
				if n := seen.Load(); n != 2 {
					t.Errorf("the server read it %d times, want 2", n)
				}
				return
			}
			if err == nil {
				t.Fatal("answered, want the connection's failure")
			}
			if n := seen.Load(); n != 1 {
				t.Errorf("the server read it %d times, want once", n)
			}
		})
	}
}

// A server that refuses a body before reading it, answers and hangs up: its answer is the one
// given, not the failure to send the rest of the body.
func TestAnAnswerBeforeTheBodyWasSentIsGiven(t *testing.T) {
	u := rawServer(t, func(_ int, c net.Conn, r *bufio.Reader) {
		if _, err := http.ReadRequest(r); err != nil { // the head only: the body stays unread
			return
		}
		io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Length: 8\r\n\r\ntoo long")
		time.Sleep(100 * time.Millisecond) // the answer arrives before the hang-up
	})
	resp, err := post(t, newTransport(), context.Background(), u, strings.Repeat("x", 64<<20))
	if err != nil {
		t.Fatalf("err = %v, want the server's 413", err)
	}
	if got := readAll(t, resp); resp.StatusCode != 413 || got != "too long" {
		t.Fatalf("%d %q", resp.StatusCode, got)
	}
}

// Bytes after a complete answer are nobody's: over TLS they may already sit in the TLS layer,
// out of sight of the socket and the reader's buffer, and must not become the next answer.
func TestBytesAfterAnAnswerOverTLSAreNotTheNextAnswer(t *testing.T) {
	srv := httptest.NewTLSServer(nil) // for its certificate and a client configuration
	cert, cfg := srv.TLS.Certificates[0], srv.Client().Transport.(*http.Transport).TLSClientConfig
	srv.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for i := 0; ; i++ {
					if _, err := http.ReadRequest(r); err != nil {
						return
					}
					if i == 0 { // an answer, then another in a record of its own that nobody asked for
						io.WriteString(c, okAnswer)
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale")
						continue
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh")
				}
			}()
		}
	}()
	tr := newTransport()
	tr.TLSClientConfig = cfg
	// "ok" twice: the second request goes on a new connection, whose first answer is "ok".
	for i, want := range []string{"ok", "ok"} {
		resp, err := post(t, tr, context.Background(), "https://"+ln.Addr().String(), "")
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); got != want {
			t.Fatalf("answer %d = %q, want %q", i, got, want)
		}
		time.Sleep(20 * time.Millisecond) // the stray record arrives
	}
}

// failingBody is a request body of an unknown type (so the head leaves before it) that gives
// some bytes and then fails.
type failingBody struct{ sent bool }

var errBody = errors.New("the body's reader failed")

func (b *failingBody) Read(p []byte) (int, error) {
	if b.sent {
		return 0, errBody
	}
	b.sent = true
	return copy(p, "abc"), nil
}

func TestABodyThatFailsPartWayFailsTheRequestAtOnce(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { io.ReadAll(r.Body) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, &failingBody{})
	req.ContentLength = 10
	_, err := newTransport().RoundTrip(req)
	// net/http wraps the body's error in a type of its own, without Unwrap: the text names it.
	if err == nil || !strings.Contains(err.Error(), errBody.Error()) {
		t.Fatalf("err = %v, want the body's own error (not a wait for an answer the server cannot give)", err)
	}
}

// An answer without a body (to HEAD, a 204, a Content-Length of 0) ends its exchange: its
// connection is kept though nobody reads the body.
func TestAnAnswerWithoutABodyKeepsItsConnection(t *testing.T) {
	for _, tc := range []struct{ name, method, path string }{
		{"HEAD", http.MethodHead, "/"}, {"204", http.MethodGet, "/204"}, {"Content-Length 0", http.MethodGet, "/empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/204":
					w.WriteHeader(http.StatusNoContent)
				case "/empty":
					w.Header().Set("Content-Length", "0")
				default:
					io.WriteString(w, "hello")
				}
			})
			tr := newTransport()
			for range 3 {
				req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			if n := conns.Load(); n != 1 {
				t.Errorf("%d connections for 3 requests, want 1", n)
			}
		})
	}
}

func TestARequestAskingToCloseItsConnectionIsNotKept(t *testing.T) {
	var conns atomic.Int32
	u := rawServer(t, func(_ int, c net.Conn, r *bufio.Reader) {
		conns.Add(1)
		for {
			if _, err := http.ReadRequest(r); err != nil {
				return
			}
			io.WriteString(c, okAnswer) // without echoing Connection: close, and without closing
		}
	})
	tr := newTransport()
	for _, connection := range []string{"close", ""} {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader("{}"))
		req.Header.Set("Connection", connection)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the first asked to close its own", n)
	}
}

func TestInterimAnswersAreSkipped(t *testing.T) {
	u := rawServer(t, func(_ int, c net.Conn, r *bufio.Reader) {
		if _, err := http.ReadRequest(r); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"+okAnswer)
	})
	resp, err := post(t, newTransport(), context.Background(), u, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); resp.StatusCode != 200 || got != "ok" {
		t.Fatalf("%d %q, want the final 200", resp.StatusCode, got)
	}
}

func TestAnEndlessHeadIsRefused(t *testing.T) {
	u := rawServer(t, func(_ int, c net.Conn, r *bufio.Reader) {
		if _, err := http.ReadRequest(r); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Filler: " + strings.Repeat("y", 1000) + "\r\n"
		for {
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	})
	_, err := post(t, newTransport(), context.Background(), u, "")
	if !errors.Is(err, errHeadTooLarge) {
		t.Fatalf("err = %v, want %v", err, errHeadTooLarge)
	}
}

// A traced request (X-Ray's client traces each provider call) sees the events net/http's
// transport reports.
func TestATracedRequestSeesTheConnectionEvents(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	tr := newTransport()
	tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	var events []string
	trace := &httptrace.ClientTrace{
		GetConn:           func(string) { events = append(events, "GetConn") },
		ConnectStart:      func(string, string) { events = append(events, "ConnectStart") },
		ConnectDone:       func(string, string, error) { events = append(events, "ConnectDone") },
		TLSHandshakeStart: func() { events = append(events, "TLSHandshakeStart") },
		TLSHandshakeDone: func(s tls.ConnectionState, err error) {
			events = append(events, fmt.Sprint("TLSHandshakeDone ", s.HandshakeComplete, err))
		},
		GotConn:              func(i httptrace.GotConnInfo) { events = append(events, fmt.Sprint("GotConn reused=", i.Reused)) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { events = append(events, "WroteRequest") },
		GotFirstResponseByte: func() { events = append(events, "GotFirstResponseByte") },
	}
	ctx := httptrace.WithClientTrace(context.Background(), trace)
	for range 2 {
		resp, err := post(t, tr, ctx, srv.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	want := []string{
		"GetConn", "ConnectStart", "ConnectDone", "TLSHandshakeStart", "TLSHandshakeDone true <nil>",
		"GotConn reused=false", "WroteRequest", "GotFirstResponseByte",
		"GetConn", "GotConn reused=true", "WroteRequest", "GotFirstResponseByte",
	}
	if !slices.Equal(events, want) {
		t.Errorf("events\n%q\nwant\n%q", events, want)
	}
}

func TestHTTPS(t *testing.T) {
	srv, conns := unstartedCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	})
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below is expected
	srv.StartTLS()
	tr := newTransport()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	tr.TLSClientConfig.RootCAs = roots
	for range 2 {
		resp, err := post(t, tr, context.Background(), srv.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); got != "HTTP/1.1" || resp.TLS == nil {
			t.Fatalf("answer %q, TLS state %v", got, resp.TLS)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}

	tr.CloseIdleConnections()
	tr.TLSClientConfig = nil // the system's roots do not know the test's certificate
	if _, err := post(t, tr, context.Background(), srv.URL, ""); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("err = %v, want a certificate error", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestProxiedRequestsGoToTheFallback(t *testing.T) {
	var viaFallback atomic.Int32
	tr := New(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		viaFallback.Add(1)
		return &http.Response{StatusCode: 204, Body: http.NoBody, Request: r}, nil
	}))
	proxy, _ := url.Parse("http://proxy.invalid:3128")
	tr.Proxy = func(r *http.Request) (*url.URL, error) {
		if r.URL.Host == "proxied.invalid" {
			return proxy, nil
		}
		return nil, nil
	}
	resp, err := post(t, tr, context.Background(), "https://proxied.invalid/v1", "")
	if err != nil || resp.StatusCode != 204 || viaFallback.Load() != 1 {
		t.Fatalf("%v, %v: want the fallback's answer", resp, err)
	}
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {})
	resp, err = post(t, tr, context.Background(), srv.URL, "")
	if err != nil || resp.StatusCode != 200 || viaFallback.Load() != 1 {
		t.Fatalf("%v, %v: want the server's own answer", resp, err)
	}
	resp.Body.Close()
}

func TestIdleConnectionsAreClosedAfterTheirTimeout(t *testing.T) {
	var open atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	tr := newTransport()
	tr.IdleConnTimeout = 50 * time.Millisecond
	resp, err := post(t, tr, context.Background(), srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	deadline := time.Now().Add(5 * time.Second)
	for open.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle connection is still open 5 s after its 50 ms timeout")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestARequestWithoutAHostIsRefused(t *testing.T) {
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "http", Path: "/"}, Header: http.Header{}}
	if _, err := newTransport().RoundTrip(req); !errors.Is(err, errNoHost) {
		t.Fatalf("err = %v", err)
	}
}
