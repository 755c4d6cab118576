package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/fault"
)

// clientBound bounds every exchange of these tests: a server that hangs fails the test.
const clientBound = 10 * time.Second

// echoStatus reads the body with ReadJSONObject and answers the status its error maps to (200
// when read), with Retry-After as the surfaces send it; a request with a Hold header announces on
// held that it has its body and waits for hold to close, its body still held.
func echoStatus(held chan<- struct{}, hold <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := httpapi.ReadJSONObject(w, r, 1<<20)
		if err != nil {
			httpapi.WriteError(w, r, fault.From(err), map[string]string{"error": err.Error()})
			return
		}
		if r.Header.Get("Hold") != "" {
			held <- struct{}{}
			<-hold
		}
		httpapi.WriteJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
}

// rawRequest sends head (the request line and headers, no blank line) and then body's pieces
// with pause between them, and returns the status line the server answered (or the error that
// ended the exchange), never waiting past clientBound.
func rawRequest(t *testing.T, addr, head string, pieces []string, pause time.Duration) (string, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(clientBound))
	if _, err := io.WriteString(c, head+"\r\n\r\n"); err != nil {
		return "", err
	}
	answered := make(chan struct {
		line string
		err  error
	}, 1)
	go func() {
		line, err := bufio.NewReader(c).ReadString('\n')
		answered <- struct {
			line string
			err  error
		}{strings.TrimSpace(line), err}
	}()
	for _, p := range pieces {
		select {
		case a := <-answered:
			return a.line, a.err
		case <-time.After(pause):
		}
		if _, err := io.WriteString(c, p); err != nil {
			break // the server closed the connection; its answer (if any) is read below
		}
	}
	a := <-answered
	return a.line, a.err
}

// Rule: a body that does not arrive whole within the read timeout is answered 408, whether the
// client sends nothing after the headers or trickles it; the connection is not held.
func TestBodyReadTimeoutAnswers408(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv := httptest.NewServer(httpapi.BodyLimits{ReadTimeout: timeout}.Wrap(echoStatus(nil, nil)))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	head := "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200"

	trickle := make([]string, 100) // a byte every 50 ms: 5 s for the whole body
	for i := range trickle {
		trickle[i] = " "
	}
	for _, tc := range []struct {
		name   string
		pieces []string
	}{
		{"nothing after the headers", nil},
		{"part of the body, then nothing", []string{`{"model":`}},
		{"a trickle", trickle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			line, err := rawRequest(t, addr, head, tc.pieces, 50*time.Millisecond)
			if err != nil {
				t.Fatalf("no answer after %s: %v", time.Since(start).Round(time.Millisecond), err)
			}
			if !strings.HasPrefix(line, "HTTP/1.1 408") {
				t.Errorf("status line %q, want 408", line)
			}
		})
	}
}

// Rule: the read deadline covers the body only; a response that takes longer than the timeout
// after the body arrived (a long stream) keeps its context.
func TestBodyReadTimeoutDoesNotCutTheResponse(t *testing.T) {
	const timeout = 200 * time.Millisecond
	canceled := make(chan error, 1)
	srv := httptest.NewServer(httpapi.BodyLimits{ReadTimeout: timeout}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := httpapi.ReadJSONObject(w, r, 1<<20); err != nil {
			t.Errorf("ReadJSONObject: %v", err)
		}
		time.Sleep(3 * timeout)
		canceled <- r.Context().Err()
		httpapi.WriteJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})))
	defer srv.Close()
	client := &http.Client{Timeout: clientBound}
	resp, err := client.Post(srv.URL, "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := <-canceled; err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("after the read timeout passed: status %d, request context %v; want 200 and a live context", resp.StatusCode, err)
	}
}

// Rule: bodies in flight never hold more than the budget together; a request whose body does not
// fit is refused at once with 503 and Retry-After, and the bytes come back when a request ends.
func TestInflightBodyBudget(t *testing.T) {
	held, hold := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(httpapi.BodyLimits{InflightBytes: 100}.Wrap(echoStatus(held, hold)))
	defer srv.Close()
	client := &http.Client{Timeout: clientBound}
	post := func(body string, hold bool) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		if hold {
			req.Header.Set("Hold", "1")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return &http.Response{}
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	body := func(n int) string { return fmt.Sprintf(`{"p":"%s"}`, strings.Repeat("x", n-8)) }

	first := make(chan *http.Response)
	go func() { first <- post(body(60), true) }()
	<-held
	resp := post(body(60), false)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a 60-byte body beside a held 60-byte one: status %d, Retry-After %q; want 503 with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := post(body(30), false); resp.StatusCode != http.StatusOK {
		t.Fatalf("a 30-byte body that fits beside it: status %d, want 200", resp.StatusCode)
	}
	close(hold)
	if r := <-first; r.StatusCode != http.StatusOK {
		t.Fatalf("the held request: status %d", r.StatusCode)
	}
	if resp := post(body(60), false); resp.StatusCode != http.StatusOK {
		t.Errorf("after the held request ended: status %d, want 200 (its bytes returned)", resp.StatusCode)
	}
}

// Rule: a request that does not fit waits for room (first come, first served) up to the gate's
// wait, and is served once a held body is released; past the wait it is refused with 503.
func TestInflightBodyBudgetWaitsForRoom(t *testing.T) {
	held, hold := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(httpapi.BodyLimits{InflightBytes: 100, Wait: clientBound}.Wrap(echoStatus(held, hold)))
	defer srv.Close()
	short := httptest.NewServer(httpapi.BodyLimits{InflightBytes: 100, Wait: 50 * time.Millisecond}.Wrap(echoStatus(held, hold)))
	defer short.Close()
	client := &http.Client{Timeout: clientBound}
	post := func(url string, hold bool) int {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(fmt.Sprintf(`{"p":"%s"}`, strings.Repeat("x", 52))))
		if hold {
			req.Header.Set("Hold", "1")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	holders := make(chan int, 2)
	for _, url := range []string{srv.URL, short.URL} {
		go func() { holders <- post(url, true) }()
		<-held
	}
	if got := post(short.URL, false); got != http.StatusServiceUnavailable {
		t.Errorf("no room within the wait: status %d, want 503", got)
	}
	waited := make(chan int)
	go func() { waited <- post(srv.URL, false) }()
	select {
	case got := <-waited:
		t.Fatalf("answered %d while the budget was full; want it to wait", got)
	case <-time.After(100 * time.Millisecond):
	}
	close(hold)
	if got := <-waited; got != http.StatusOK {
		t.Errorf("after room was made: status %d, want 200", got)
	}
	for range 2 {
		if got := <-holders; got != http.StatusOK {
			t.Errorf("a held request: status %d", got)
		}
	}
}
