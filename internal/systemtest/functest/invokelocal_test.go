package functest

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// TestInvokeLocalRunsAnEvent runs scripts/invoke-local.sh (`make invoke-local`) as a reader of
// events/README.md would, with the failover event of the OpenAI chat function: the script must
// build the function, prepare its own moto (tables, signing keyset, the events' key) and print the
// streamed answer as a prelude line and the body.
func TestInvokeLocalRunsAnEvent(t *testing.T) {
	root := testenv.RepoRoot(t)
	testenv.RIE(t) // fails clearly when `make test-tools` has not run
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "invoke-local.sh"), "openai-chat", "events/openai-chat-failover.json")
	cmd.Dir = t.TempDir() // the event path is taken relative to the checkout, as make passes it
	// On timeout, TERM lets the script's trap stop the moto and emulator it started.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("invoke-local.sh: %v\nstdout:\n%s\nstderr:\n%s", err, out, &stderr)
	}

	prelude, body, ok := bytes.Cut(out, []byte("\n"))
	if !ok {
		t.Fatalf("output is not a prelude line and a body:\n%s", out)
	}
	var p struct {
		StatusCode int `json:"statusCode"`
	}
	if err := json.Unmarshal(prelude, &p); err != nil || p.StatusCode != 200 {
		t.Errorf("prelude %s (%v), want statusCode 200", prelude, err)
	}
	var answer struct {
		SecureAI struct {
			ServedModel string `json:"served_model"`
			Failover    struct {
				Occurred bool `json:"occurred"`
			} `json:"failover"`
		} `json:"secureai"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		t.Fatalf("body is no completion: %v\n%s\nstderr:\n%s", err, body, &stderr)
	}
	// The events' key was accepted, and the chat function (which answers 500 without a signing
	// keyset) failed over to demo/ok.
	if s := answer.SecureAI; s.ServedModel != "demo/ok" || !s.Failover.Occurred {
		t.Errorf("secureai = %+v, want served_model demo/ok after a failover\n%s", s, body)
	}
}
