package agentclients

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// claudeCode runs Claude Code in print mode against the gateway's /v1/messages, with its key in
// x-api-key (ANTHROPIC_API_KEY) and its own retries off, so only the gateway's failover can save
// the run.
func (e *env) claudeCode(t *testing.T, claude, dir, model, prompt string, args ...string) runResult {
	t.Helper()
	env := e.clientEnv(t,
		"ANTHROPIC_BASE_URL="+e.gw.Base,
		"ANTHROPIC_API_KEY="+e.key,
		"CLAUDE_CODE_MAX_RETRIES=0",
		"API_TIMEOUT_MS=60000",
	)
	return run(t, dir, env, claude, append([]string{"-p", prompt, "--model", model, "--output-format", "text"}, args...)...)
}

// claudeCLI is where `make test-tools` installs Claude Code.
const claudeCLI = ".agent-clients/node_modules/.bin/claude"

func TestClaudeCodePlainAnswer(t *testing.T) {
	claude := testenv.Tool(t, claudeCLI)
	e := newEnv(t)
	r := e.claudeCode(t, claude, t.TempDir(), claudeKnownID, "say hi")
	r.requireOK(t, plainAnswer)
	e.requireFailover(t, 1)
}

// The tool turn runs with a model id Claude Code does not know, the shape it sends for a gateway's
// own ids: the environment as a role-system message, adaptive thinking, output_config.
func TestClaudeCodeToolUse(t *testing.T) {
	claude := testenv.Tool(t, claudeCLI)
	e := newEnv(t)
	dir := t.TempDir()
	const content = "scratch token amber-falcon-42"
	file := filepath.Join(dir, "hello.txt")
	if err := os.WriteFile(file, []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.claudeCode(t, claude, dir, claudeGatewayID,
		"Read the file hello.txt and tell me what it says.\nCALL Read {\"file_path\":\""+file+"\"}",
		"--allowedTools", "Read")
	r.requireOK(t, content)
	if !strings.Contains(r.stdout, toolQuote) {
		t.Errorf("the answer is not fake/agent's quote of the tool result:\n%s", r.stdout)
	}
	e.requireFailover(t, 2)
	e.requireToolRoundTrip(t, "Read", content)
}
