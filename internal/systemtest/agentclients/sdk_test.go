package agentclients

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// venvPython is the checkout's Python, where `make test-tools` installs requirements-test.txt.
const venvPython = ".venv/bin/python"

// python runs one of testdata's scripts with the checkout's .venv, where `make test-tools`
// installs the SDKs pinned in requirements-test.txt, against the gateway.
func (e *env) python(t *testing.T, py, model, script string, args []string, extra ...string) runResult {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	env := e.clientEnv(t, append([]string{"GATEWAY_URL=" + e.gw.Base, "GATEWAY_KEY=" + e.key, "MODEL=" + model, "PYTHONDONTWRITEBYTECODE=1"}, extra...)...)
	r := run(t, t.TempDir(), env, py, append([]string{path}, args...)...)
	if strings.Contains(r.stderr, "ModuleNotFoundError") {
		t.Fatalf("an SDK is missing from .venv: `make test-tools` installs requirements-test.txt\n%s", tail(r.stderr, 2000))
	}
	return r
}

func TestAnthropicPython(t *testing.T) {
	for _, mode := range []string{"stream", "create"} {
		t.Run(mode, func(t *testing.T) {
			py := testenv.Tool(t, venvPython)
			e := newEnv(t)
			e.python(t, py, claudeKnownID, "anthropic_sdk.py", []string{mode}).requireOK(t, plainAnswer)
			e.requireFailover(t, 1)
		})
	}
}

func TestOpenAIPythonResponses(t *testing.T) {
	for _, mode := range []string{"create-stream", "stream"} {
		t.Run(mode, func(t *testing.T) {
			py := testenv.Tool(t, venvPython)
			e := newEnv(t)
			e.python(t, py, openaiID, "openai_responses.py", []string{mode}).requireOK(t, plainAnswer)
			e.requireFailover(t, 1)
		})
	}
}

func TestOpenAIAgentsSDKFunctionTool(t *testing.T) {
	py := testenv.Tool(t, venvPython)
	e := newEnv(t)
	const secret = "amber-falcon-42"
	r := e.python(t, py, openaiID, "agents_sdk.py", nil, "SECRET="+secret)
	r.requireOK(t, toolQuote+"the secret word for gateways is "+secret)
	e.requireFailover(t, 2)
	e.requireToolRoundTrip(t, "secret_word", secret)
	for _, x := range e.agentRequests() {
		if x.Req.Stream {
			t.Errorf("the Agents SDK's run was meant to be non-streamed; a request had stream: true")
		}
	}
}
