package proctest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewayproc"
)

// clientBound bounds every exchange with the server: nothing may hang.
const clientBound = 30 * time.Second

// build compiles cmd/gateway as make run builds it.
func build(t *testing.T) string {
	t.Helper()
	bin, err := gatewayproc.Build(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// server is one running gateway process.
type server struct {
	*gatewayproc.Gateway
}

// start runs bin on a free loopback port with the embedded store in dataDir, the demo provider,
// secret as its admin key and env added, and waits until it answers. The test's end kills it.
func start(t *testing.T, bin, dataDir, secret string, env ...string) *server {
	t.Helper()
	g, err := gatewayproc.Start(context.Background(), bin, dataDir, secret, filepath.Join(t.TempDir(), "gateway.log"),
		append([]string{"SECUREAI_DEMO=true"}, env...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.Kill()
		if t.Failed() {
			t.Logf("gateway output:\n%s", g.LogTail(1<<20))
		}
	})
	return &server{g}
}

// post sends an idempotent classic request and returns the answer with its body read.
func (s *server) post(secret, idemKey, body string) (*http.Response, string, error) {
	req, err := http.NewRequest(http.MethodPost, s.Base+"/chat/completions", strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idemKey)
	resp, err := (&http.Client{Timeout: clientBound}).Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// Rule (issue 12.1): a crash does not lock an Idempotency-Key. The server is killed while an
// idempotent request runs; after a restart on the same store the retry runs at once (the first
// model hangs for its 4 s timeout, then the chain fails over to demo/ok) instead of waiting out
// the dead process's lease and getting 409.
func TestKilledRequestDoesNotLockItsIdempotencyKey(t *testing.T) {
	bin := build(t)
	dataDir := t.TempDir()
	secret := apikey.NewSecret()
	const key = "crash-1"
	body := `{"prompt":"Hello","index":"Zero-Knowledge","models":[{"model":"demo/hang","timeout_ms":4000},"demo/ok"]}`

	first := start(t, bin, dataDir, secret)
	answered := make(chan error, 1)
	go func() {
		resp, _, err := first.post(secret, key, body)
		if err == nil {
			err = fmt.Errorf("answered %d", resp.StatusCode)
		}
		answered <- err
	}()
	time.Sleep(time.Second) // the request holds its key and hangs on demo/hang for 4 s
	first.Kill()            // SIGKILL, as a crash
	if err := <-answered; err == nil || strings.HasPrefix(err.Error(), "answered") {
		t.Fatalf("the first request was not cut by the kill (%v); the test proves nothing", err)
	}

	second := start(t, bin, dataDir, secret)
	resp, got, err := second.post(secret, key, body)
	if err != nil {
		t.Fatalf("retry after the restart: %v", err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != "" || !strings.Contains(got, `"served_model":"demo/ok"`) {
		t.Fatalf("retry after the restart: status %d, replayed %q, body %s; want a fresh 200 served by demo/ok",
			resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), got)
	}
	// The key works as usual from then on: the next repeat is the recorded answer.
	resp, replayed, err := second.post(secret, key, body)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != "true" || replayed != got {
		t.Fatalf("repeat of the finished request: %v, status %d, replayed %q; want the recorded answer", err, statusOf(resp), resp.Header.Get("Idempotent-Replayed"))
	}
}

func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// Rule (issue 12.2): a body that does not arrive within SECUREAI_BODY_READ_TIMEOUT is answered
// 408 in the classic envelope, whether the client stalls after the headers or after part of the
// body; the server does not hold the connection.
func TestStalledBodyIsAnswered408(t *testing.T) {
	bin := build(t)
	secret := apikey.NewSecret()
	s := start(t, bin, t.TempDir(), secret, "SECUREAI_BODY_READ_TIMEOUT=1s")
	for _, tc := range []struct{ name, sent string }{
		{"nothing after the headers", ""},
		{"part of the body", `{"prompt":"Hel`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", s.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(clientBound))
			fmt.Fprintf(c, "POST /chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n%s", secret, tc.sent)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(got), `"success":false`) {
				t.Errorf("status %d, body %s; want 408 in the classic envelope", resp.StatusCode, got)
			}
			// The connection is closed after the answer, not kept for a body that never came.
			if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
				t.Errorf("after the 408 the connection reads %v, want EOF", err)
			}
		})
	}
}
