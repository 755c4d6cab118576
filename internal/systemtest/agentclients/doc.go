// Package agentclients runs the real coding agents and agent SDKs against the gateway `make run`
// serves, each through a failover: Claude Code in print mode (a plain answer and a Read tool turn)
// over /v1/messages, Codex CLI's `codex exec` (an answer and a shell-tool turn in a read-only
// sandbox) over /v1/responses, the OpenAI Agents SDK (a run with a function tool), anthropic-python
// (messages.stream and messages.create) and openai-python (responses.create(stream=True) and
// responses.stream). Its tests build and start cmd/gateway with a catalog whose aliases map the
// model ids the clients send to the chain fake/fail → fake/agent, both served by a scripted
// Chat Completions fake on 127.0.0.1: fake/fail always answers 500, fake/agent answers a tool call
// when the prompt's "CALL <tool> <args>" line names an offered tool, quotes a tool result back, and
// else says a fixed sentence. Each test checks that the client exited 0 with the expected text,
// that the fake saw the primary fail before the fallback served, and, for the tool turns, that the
// next request carried the tool's result. The clients' own retries are off, so only the gateway's
// failover can save a run.
//
// The clients are pinned and installed by `make test-tools` (scripts/setup-test-tools.sh): the
// CLIs with npm into .agent-clients/ from scripts/agent-clients/package-lock.json, the SDKs into
// .venv/ from requirements-test.txt. A missing one fails the test under CI (CI=true) and skips it,
// saying so, elsewhere. Every client runs with a home of its own, telemetry and updates off, and
// its proxy variables pointing at a loopback proxy that refuses every request, so no test sends
// anything off the machine (Codex's attempts to reach its own hosts are logged, and harmless).
package agentclients
