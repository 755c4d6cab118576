package samlocaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/testkit/childproc"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// eventsKey is the fixed test key of events/README.md, which the script creates in its moto.
const eventsKey = "sk-7e577e577e577e577e577e577e577e577e577e577e577e577e577e577e577e57"

// TestStartAPIServesTheRoutes serves the API with scripts/sam-local.sh start-api and sends what
// clients send: a plain and a streaming chat completion, a failover, a model by its id (which has
// a slash) and an admin route with a key that is not an admin's and with an unknown key.
func TestStartAPIServesTheRoutes(t *testing.T) {
	root := testenv.RepoRoot(t)
	for _, tool := range []string{".venv/bin/sam", ".venv/bin/moto_server"} {
		if _, err := os.Stat(filepath.Join(root, tool)); err != nil {
			t.Fatalf("%s is missing: run 'make test-tools' (%v)", tool, err)
		}
	}
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "sam-local.sh"), "start-api", port)
	cmd.Dir = root
	cmd.Env = os.Environ()
	if os.Geteuid() == 0 {
		// A daemon of its own: neither the machine's Docker nor a parallel run is touched.
		cmd.Env = append(cmd.Env, "SAM_LOCAL_PRIVATE_DOCKER=1")
	}
	out := &childproc.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// TERM to the script alone (not childproc's signal to the whole group) lets its trap stop SAM,
	// moto and the private Docker daemon in order.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 90 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed when the script has ended
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(2 * time.Minute):
			t.Errorf("scripts/sam-local.sh did not stop within 2 min of TERM\n%s", out)
		}
	}
	defer stop()

	base := "http://127.0.0.1:" + port
	if err := waitListening(ctx, "127.0.0.1:"+port, exited); err != nil {
		if errors.Is(err, errExited) {
			err = fmt.Errorf("%w: %v", err, waitErr)
		}
		t.Fatalf("sam local start-api did not come up: %v\n%s", err, out)
	}
	c := &client{t: t, ctx: ctx, base: base, log: out}

	t.Run("plain chat", func(t *testing.T) {
		c.t = t
		status, h, body := c.do("POST", "/v1/chat/completions", eventsKey, `{"model":"demo/ok","messages":[{"role":"user","content":"Hello"}]}`)
		completion := c.completion(status, h, body)
		if completion.Model != "demo/ok" || completion.SecureAI.ServedModel != "demo/ok" || completion.SecureAI.Failover.Occurred {
			t.Errorf("answer %s: want demo/ok served without failover", body)
		}
		if len(completion.Choices) != 1 || completion.Choices[0].Message.Content == "" {
			t.Errorf("answer %s: want one choice with content", body)
		}
	})
	t.Run("streaming chat arrives whole", func(t *testing.T) {
		c.t = t
		status, h, body := c.do("POST", "/v1/chat/completions", eventsKey, `{"model":"demo/ok","messages":[{"role":"user","content":"Hello"}],"stream":true}`)
		if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("status %d, Content-Type %q, want 200 text/event-stream\n%s", status, h.Get("Content-Type"), body)
		}
		// SAM buffers: the whole stream is one body, every frame a chunk, ending in [DONE].
		frames := strings.Split(strings.TrimSpace(string(body)), "\n\n")
		if len(frames) < 3 || frames[len(frames)-1] != "data: [DONE]" {
			t.Fatalf("stream %q: want chunks ending with data: [DONE]", body)
		}
		var text strings.Builder
		for _, f := range frames[:len(frames)-1] {
			var chunk struct {
				Object  string `json:"object"`
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(f, "data: ")), &chunk); err != nil || chunk.Object != "chat.completion.chunk" {
				t.Fatalf("frame %q is no chunk (%v)", f, err)
			}
			for _, ch := range chunk.Choices {
				text.WriteString(ch.Delta.Content)
			}
		}
		if text.Len() == 0 {
			t.Errorf("stream %q carries no content", body)
		}
	})
	t.Run("failover", func(t *testing.T) {
		c.t = t
		status, h, body := c.do("POST", "/v1/chat/completions", eventsKey, `{"model":"demo/error-500","fallback_models":["demo/ok"],"messages":[{"role":"user","content":"Hello"}]}`)
		completion := c.completion(status, h, body)
		s := completion.SecureAI
		if s.ServedModel != "demo/ok" || s.RequestedModel != "demo/error-500" || !s.Failover.Occurred || len(s.Failover.Attempts) != 2 ||
			s.Failover.Attempts[0].Reason != "server_error" {
			t.Errorf("answer %s: want demo/error-500 failing with server_error, then demo/ok served", body)
		}
	})
	t.Run("model id with a slash", func(t *testing.T) {
		c.t = t
		status, _, body := c.do("GET", "/v1/models/demo/ok", eventsKey, "")
		var model struct{ ID, Object string }
		if err := json.Unmarshal(body, &model); status != 200 || err != nil || model.ID != "demo/ok" || model.Object != "model" {
			t.Errorf("status %d, body %s: want 200 with the model demo/ok", status, body)
		}
	})
	t.Run("admin route", func(t *testing.T) {
		c.t = t
		// The admin function's own answers (API Gateway's own 403 would have no request id).
		for _, tc := range []struct {
			key     string
			status  int
			message string
		}{
			{eventsKey, 403, "admin API key"},
			{"sk-" + strings.Repeat("0bad", 16), 401, ""},
		} {
			status, h, body := c.do("GET", "/admin/api-keys", tc.key, "")
			var answer struct {
				Success   *bool  `json:"success"`
				Message   string `json:"message"`
				RequestID string `json:"request_id"`
			}
			err := json.Unmarshal(body, &answer)
			if status != tc.status || err != nil || answer.Success == nil || *answer.Success || answer.RequestID == "" ||
				answer.RequestID != h.Get("X-Request-Id") || !strings.Contains(answer.Message, tc.message) {
				t.Errorf("status %d, body %s: want the admin function's %d naming %q", status, body, tc.status, tc.message)
			}
		}
	})

	stop()
	if t.Failed() {
		t.Logf("scripts/sam-local.sh output:\n%s", out)
	}
}

type completion struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	SecureAI struct {
		ServedModel    string `json:"served_model"`
		RequestedModel string `json:"requested_model"`
		Failover       struct {
			Occurred bool `json:"occurred"`
			Attempts []struct {
				Model  string `json:"model"`
				Reason string `json:"reason"`
			} `json:"attempts"`
		} `json:"failover"`
	} `json:"secureai"`
}

type client struct {
	t    *testing.T
	ctx  context.Context
	base string
	log  fmt.Stringer
}

// do sends one request; a function's first request may wait for SAM to build its image and start
// its container.
func (c *client) do(method, path, key, body string) (int, http.Header, []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 3*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", method, path, err, c.log)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, b
}

func (c *client) completion(status int, h http.Header, body []byte) completion {
	c.t.Helper()
	var v completion
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		c.t.Fatalf("status %d, Content-Type %q, want 200 JSON\n%s", status, h.Get("Content-Type"), body)
	}
	if err := json.Unmarshal(body, &v); err != nil {
		c.t.Fatalf("answer is no completion: %v\n%s", err, body)
	}
	return v
}

var errExited = errors.New("scripts/sam-local.sh exited")

// waitListening waits until something accepts connections at addr (SAM's server), while the
// script runs.
func waitListening(ctx context.Context, addr string, exited <-chan struct{}) error {
	for {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			return conn.Close()
		}
		select {
		case <-exited:
			return errExited
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	addr, err := childproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	return port
}
