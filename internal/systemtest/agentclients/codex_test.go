package agentclients

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// codexConfig points Codex at the gateway's /v1/responses as a model provider of its own, with
// the key from GW_KEY (Authorization: Bearer) and its own retries off, so only the gateway's
// failover can save the run.
const codexConfig = `model = %q
model_provider = "gw"

[model_providers.gw]
name = "SecureAI Gateway"
base_url = %q
env_key = "GW_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`

// codexExec runs `codex exec` in dir against the gateway with a read-only sandbox; it returns the
// run and the last message Codex wrote.
func (e *env) codexExec(t *testing.T, codex, dir, prompt string) (runResult, string) {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(fmt.Sprintf(codexConfig, codexID, e.gw.Base+"/v1")), 0o600); err != nil {
		t.Fatal(err)
	}
	last := filepath.Join(t.TempDir(), "last-message.txt")
	env := e.clientEnv(t, "CODEX_HOME="+home, "GW_KEY="+e.key)
	r := run(t, dir, env, codex, "exec", "--skip-git-repo-check", "--sandbox", "read-only", "--ephemeral",
		"--color", "never", "-C", dir, "-o", last, prompt)
	msg, _ := os.ReadFile(last)
	return r, string(msg)
}

// codexCLI is where `make test-tools` installs Codex CLI.
const codexCLI = ".agent-clients/node_modules/.bin/codex"

func TestCodexPlainAnswer(t *testing.T) {
	codex := testenv.Tool(t, codexCLI)
	e := newEnv(t)
	r, last := e.codexExec(t, codex, t.TempDir(), "say hi")
	r.requireOK(t, plainAnswer)
	if strings.TrimSpace(last) != plainAnswer {
		t.Errorf("Codex's last message is %q, want fake/agent's answer %q", last, plainAnswer)
	}
	e.requireFailover(t, 1)
}

// hiLine is echo hi's output as a line of its own, in the tool result Codex sends back.
var hiLine = regexp.MustCompile(`(?m)^hi$`)

func TestCodexShellTool(t *testing.T) {
	codex := testenv.Tool(t, codexCLI)
	e := newEnv(t)
	r, last := e.codexExec(t, codex, t.TempDir(), "Run echo hi and tell me what it printed.\nCALL exec_command {\"cmd\":\"echo hi\"}")
	r.requireOK(t, toolQuote)
	if !strings.HasPrefix(last, toolQuote) || !hiLine.MatchString(last) {
		t.Errorf("Codex's last message is %q, want fake/agent's quote of echo hi's output", last)
	}
	e.requireFailover(t, 2)
	e.requireToolRoundTrip(t, "exec_command", "hi")
	for _, x := range e.agentRequests() {
		for _, m := range x.Req.Messages {
			if m.Role == "tool" && !hiLine.MatchString(text(m.Content)) {
				t.Errorf("the tool result Codex sent back does not hold echo hi's output: %q", text(m.Content))
			}
		}
	}
}
