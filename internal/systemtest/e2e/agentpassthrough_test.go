package e2e

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/tidwall/gjson"
)

// Where the wire matches, the agent surfaces pass the caller's request through (SPEC 12): a
// Messages request to an Anthropic provider, a Responses request to an OpenAI provider marked
// responses: true. These tests drive the assembled gateway as Claude Code and Codex do and compare
// what reached the provider with what the caller sent, and what the caller got with what the
// provider wrote.

// claudeCodeBody is a Messages request as Claude Code sends one (agent-clients.md §4 and §9): the
// members the gateway does not own, each of which must reach an Anthropic provider byte for byte —
// a thinking block with its signature, cache_control, context_management, output_config,
// metadata, a deferred tool, a role-system message, and an unknown member written with odd spacing
// and escapes.
const claudeCodeBody = `"max_tokens":32000,
	"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.328.893; cc_entrypoint=sdk-cli;"},
	          {"type":"text","text":"You are a Claude agent.","cache_control":{"type":"ephemeral"}}],
	"messages":[
	  {"role":"user","content":[{"type":"text","text":"read the file hello.txt"}]},
	  {"role":"system","content":"# Environment\nplatform: linux"},
	  {"role":"assistant","content":[{"type":"thinking","thinking":"I should read it.","signature":"EqQBCkYIBxgC\u002bKkB/sig=="},
	     {"type":"text","text":"Reading the file."},
	     {"type":"tool_use","id":"toolu_01","name":"Read","input":{"file_path":"/tmp/hello.txt"}}]},
	  {"role":"user","content":[{"tool_use_id":"toolu_01","type":"tool_result","content":"1\thello","cache_control":{"type":"ephemeral"}}]}],
	"tools":[{"name":"Read","description":"Reads a file.","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}},
	         {"name":"DeferredToolPlaceholder","description":"Never call this tool.","input_schema":{"type":"object","properties":{}},"defer_loading":true}],
	"metadata":{"user_id":"{\"device_id\":\"d1\",\"account_uuid\":\"\",\"session_id\":\"s1\"}"},
	"thinking":{"type":"adaptive","display":"omitted"},
	"output_config":{"effort":"high"},
	"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},
	"x_unknown" : { "a" : [1, 2.50, "caf\u00e9"] }`

// claudeCodeHeaders are the headers Claude Code sends besides its key (agent-clients.md §3).
var claudeCodeHeaders = http.Header{
	"Anthropic-Version":        {"2023-06-01"},
	"Anthropic-Beta":           {"claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27"},
	"X-Claude-Code-Session-Id": {"0c9a6a53-6f0e-4a43-9d0c-6f0d0a6c2f11"},
	"X-App":                    {"cli"},
	"User-Agent":               {"claude-cli/2.1.328 (external, sdk-cli)"},
	"X-Stainless-Retry-Count":  {"0"},
	"Anthropic-Dangerous-Direct-Browser-Access": {"true"},
	"X-Gw-Tenant": {"acme"},
}

// codexBody is a Responses request as Codex sends one (agent-clients.md §5 and §9), with the
// members that are no standard Responses field (client_metadata, namespace and custom tools, an
// additional_tools item): the caller's own API, so a Responses provider gets them as sent.
const codexBody = `"input":[
	  {"type":"additional_tools","role":"developer","tools":[{"type":"function","name":"view_image","parameters":{"type":"object","properties":{}}}]},
	  {"type":"message","id":"msg_1","role":"developer","content":[{"type":"input_text","text":"You are a coding agent running in the Codex CLI."}]},
	  {"type":"message","id":"msg_2","role":"user","content":[{"type":"input_text","text":"run echo hi"}]},
	  {"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAAABoZ\u002fenc=="},
	  {"type":"function_call","status":"completed","id":"fc_1","name":"exec_command","arguments":"{\"cmd\": \"echo hi\"}","call_id":"call_1"},
	  {"type":"function_call_output","id":"fco_1","call_id":"call_1","output":"hi\n"}],
	"tools":[{"type":"function","name":"exec_command","strict":false,"description":"Runs a command.","parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"],"additionalProperties":false}},
	         {"type":"namespace","name":"multi_agent_v1","description":"Agents.","tools":[{"type":"function","name":"close_agent","parameters":{"type":"object","properties":{}}}]},
	         {"type":"custom","name":"exec","description":"Runs JavaScript.","format":{"type":"grammar","syntax":"lark","definition":"start: /.+/"}},
	         {"type":"web_search","external_web_access":false}],
	"tool_choice":"auto","parallel_tool_calls":true,"reasoning":{"effort":"low","summary":"auto","context":"all_turns"},
	"store":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"5b0b7c5e-2f4f-4a5e-9a7e-0d6f2a1c3b4d",
	"client_metadata":{"session_id":"s1","thread_id":"t1","x-codex-turn-metadata":"{\"sandbox\":\"read-only\"}"},
	"text":{"verbosity":"low"},
	"x_unknown" : { "a" : [1, 2.50, "caf\u00e9"] }`

// codexHeaders are the headers Codex sends besides its key (agent-clients.md §3).
var codexHeaders = http.Header{
	"Session-Id":                             {"9b7f0c9e-1d1a-4b8e-8f3e-2f9e1b7d6c5a"},
	"Thread-Id":                              {"9b7f0c9e-1d1a-4b8e-8f3e-2f9e1b7d6c5a"},
	"X-Client-Request-Id":                    {"9b7f0c9e-1d1a-4b8e-8f3e-2f9e1b7d6c5a"},
	"X-Codex-Window-Id":                      {"9b7f0c9e-1d1a-4b8e-8f3e-2f9e1b7d6c5a:0"},
	"X-Codex-Turn-Metadata":                  {`{"installation_id":"i1","sandbox":"read-only"}`},
	"X-Codex-Beta-Features":                  {"remote_compaction_v2"},
	"X-Openai-Internal-Codex-Responses-Lite": {"true"},
	"Originator":                             {"codex_exec"},
	"User-Agent":                             {"codex_exec/0.169.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.169.0)"},
}

// gatewayMembers are the members the gateway owns: never a provider's.
var gatewayMembers = []string{"model", "models", "fallback_models", "redundancy", "stream"}

// members are a JSON object's members, each as its raw bytes.
func members(t *testing.T, body []byte) map[string]string {
	t.Helper()
	if !gjson.ValidBytes(body) {
		t.Fatalf("not JSON: %s", body)
	}
	out := map[string]string{}
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		if _, dup := out[k.String()]; dup {
			t.Errorf("member %q twice", k.String())
		}
		out[k.String()] = v.Raw
		return true
	})
	return out
}

// checkCallerBytes checks that upstream is the caller's body but for the gateway's members:
// every other member byte for byte, model the provider's id, stream as asked.
func checkCallerBytes(t *testing.T, caller, upstream []byte, upstreamModel string, stream bool) {
	t.Helper()
	want, got := members(t, caller), members(t, upstream)
	for _, m := range gatewayMembers {
		delete(want, m)
	}
	want["model"] = `"` + upstreamModel + `"`
	if stream {
		want["stream"] = "true"
	}
	if !reflect.DeepEqual(got, want) {
		for k, w := range want {
			if got[k] != w {
				t.Errorf("member %s reached the provider as\n%s\nthe caller sent\n%s", k, got[k], w)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("member %s reached the provider; the caller did not send it (or it is the gateway's): %s", k, got[k])
			}
		}
	}
	// The parsed view agrees: nothing was re-encoded into another meaning.
	var g, w map[string]any
	_ = json.Unmarshal(upstream, &g)
	_ = json.Unmarshal(caller, &w)
	for _, m := range gatewayMembers {
		delete(w, m)
		delete(g, m)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("the provider's body, parsed, differs from the caller's beyond model and stream")
	}
}

// checkHeadersStay checks that no header the caller sent reached the provider but allowed
// (each the caller's value), and that the provider got its own credential, never the caller's.
func checkHeadersStay(t *testing.T, sent, got http.Header, allowed ...string) {
	t.Helper()
	for name, v := range sent {
		if g := got.Values(name); len(g) > 0 && g[0] == v[0] && !contains(allowed, name) {
			t.Errorf("the caller's %s: %s reached the provider", name, v[0])
		}
	}
	for _, name := range allowed {
		if g := got.Get(name); g != sent.Get(name) {
			t.Errorf("%s: the provider got %q, the caller sent %q", name, g, sent.Get(name))
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if http.CanonicalHeaderKey(x) == http.CanonicalHeaderKey(s) {
			return true
		}
	}
	return false
}

func withHeaders(base http.Header, more ...string) http.Header {
	h := base.Clone()
	for i := 0; i+1 < len(more); i += 2 {
		h.Set(more[i], more[i+1])
	}
	return h
}

// checkEventsPassed checks that the caller got the provider's events in order, each as it was
// written but for the Response or message objects the gateway stamps (stamped: where they are).
func checkEventsPassed(t *testing.T, r *result, sent []sseEvent, served string, stamped func(name string) string) {
	t.Helper()
	if len(r.frames) != len(sent) {
		t.Fatalf("the caller got %d events, the provider sent %d:\n%q\n%v", len(r.frames), len(sent), r.frames, sent)
	}
	for i, ev := range sent {
		got := r.frames[i]
		if r.events[i] != ev.name {
			t.Errorf("event %d is %q, the provider sent %q", i, r.events[i], ev.name)
		}
		at := stamped(ev.name)
		if at == "" {
			if got != ev.data {
				t.Errorf("event %d (%s) altered:\n got %s\nsent %s", i, ev.name, got, ev.data)
			}
			continue
		}
		obj := gjson.Get(got, at)
		if obj.Get("model").String() != served || obj.Get("secureai.served_model").String() != served {
			t.Errorf("event %d (%s): %s.model %q, secureai %s; want the served %s and the report", i, ev.name, at, obj.Get("model"), obj.Get("secureai").Raw, served)
		}
		var g, w map[string]any
		_ = json.Unmarshal([]byte(got), &g)
		_ = json.Unmarshal([]byte(ev.data), &w)
		unstamp(g, at)
		unstamp(w, at)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("event %d (%s) altered beyond model and secureai:\n got %s\nsent %s", i, ev.name, got, ev.data)
		}
	}
}

// unstamp removes model and secureai from the object at path (one member name, or "" for v).
func unstamp(v map[string]any, at string) {
	if at != "." {
		v, _ = v[at].(map[string]any)
	}
	delete(v, "model")
	delete(v, "secureai")
}

// checkPlainPassed checks that the caller got the provider's answer but for model and secureai.
func checkPlainPassed(t *testing.T, r *result, sent []byte, served string) {
	t.Helper()
	j := r.json()
	if j.Get("model").String() != served || j.Get("secureai.served_model").String() != served {
		t.Errorf("model %q, secureai %s; want the served %s and the report", j.Get("model"), j.Get("secureai").Raw, served)
	}
	if j.Get("secureai.dropped").Exists() {
		t.Errorf("a passed-through answer says something was dropped: %s", j.Get("secureai").Raw)
	}
	var g, w map[string]any
	_ = json.Unmarshal(r.body, &g)
	_ = json.Unmarshal(sent, &w)
	unstamp(g, ".")
	unstamp(w, ".")
	if !reflect.DeepEqual(g, w) {
		t.Errorf("the answer differs from the provider's beyond model and secureai:\n got %s\nsent %s", r.body, sent)
	}
}

func TestMessagesPassthrough(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			body := `{"model":"anth/thinking","fallback_models":["fake/ok"],"redundancy":{"timeout_ms":5000},` + claudeCodeBody
			if stream {
				body += `,"stream":true`
			}
			body += "}"
			// Claude Code's key header: the gateway's key, which must never reach the provider.
			sent := withHeaders(claudeCodeHeaders, "X-Api-Key", e.secret)
			r := e.post(t, nil, "/v1/messages?beta=true", body, sent)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			calls := e.anth.callsTo(anthThinking)
			if len(calls) != 1 {
				t.Fatalf("the Anthropic fake got %d calls, want 1", len(calls))
			}
			c := calls[0]
			if c.path != "/v1/messages" {
				t.Errorf("upstream path %q", c.path)
			}
			checkCallerBytes(t, []byte(body), c.body, anthThinking, stream)
			checkHeadersStay(t, sent, c.header, "Anthropic-Beta", "Anthropic-Version")
			if got := c.header.Get("X-Api-Key"); got != anthKey {
				t.Errorf("the provider got x-api-key %q, want its own credential", got)
			}
			if got := c.header.Get("Authorization"); got != "" {
				t.Errorf("the provider got Authorization %q", got)
			}
			if n := e.up.Fake.Calls("ok"); n != 0 {
				t.Errorf("fake/ok got %d calls: no failover was due", n)
			}
			if stream {
				checkEventsPassed(t, r, e.anth.lastSent(anthThinking), "anth/thinking", func(name string) string {
					if name == "message_start" {
						return "message"
					}
					return ""
				})
				if gjson.Get(r.frames[0], "message.secureai.dropped").Exists() {
					t.Errorf("a passed-through stream says something was dropped: %s", r.frames[0])
				}
				return
			}
			checkPlainPassed(t, r, e.anth.lastPlain(anthThinking), "anth/thinking")
		})
	}
}

func TestResponsesPassthrough(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			body := `{"model":"resp/ok","fallback_models":["fake/ok"],"redundancy":{"timeout_ms":5000},` + codexBody
			if stream {
				body += `,"stream":true`
			}
			body += "}"
			sent := withHeaders(codexHeaders, "Authorization", "Bearer "+e.secret)
			r := e.post(t, nil, "/v1/responses", body, sent)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			calls := e.resp.callsTo(respOK)
			if len(calls) != 1 {
				t.Fatalf("the Responses fake got %d calls, want 1", len(calls))
			}
			c := calls[0]
			if c.path != "/v1/responses" {
				t.Errorf("upstream path %q, want /v1/responses", c.path)
			}
			checkCallerBytes(t, []byte(body), c.body, respOK, stream)
			checkHeadersStay(t, sent, c.header)
			if n := e.up.Fake.Calls("ok"); n != 0 {
				t.Errorf("fake/ok got %d calls: no failover was due", n)
			}
			if stream {
				checkEventsPassed(t, r, e.resp.lastSent(respOK), "resp/ok", func(name string) string {
					if responseObjectEvents[name] {
						return "response"
					}
					return ""
				})
				return
			}
			checkPlainPassed(t, r, e.resp.lastPlain(respOK), "resp/ok")
		})
	}
}

// responseObjectEvents are the Responses events that carry the Response object.
var responseObjectEvents = map[string]bool{"response.created": true, "response.in_progress": true, "response.completed": true,
	"response.failed": true, "response.incomplete": true}

// Without responses: true an OpenAI provider's Responses request is translated to Chat
// Completions: what has no equivalent there stays behind and is named in the report.
func TestResponsesTranslatedWithoutResponsesFlag(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			body := `{"model":"respoff/ok",` + codexBody
			if stream {
				body += `,"stream":true`
			}
			body += "}"
			r := e.post(t, nil, "/v1/responses", body, withHeaders(codexHeaders, "Authorization", "Bearer "+e.secret))
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			calls := e.resp.callsTo(respOK)
			if len(calls) != 1 || calls[0].path != "/v1/chat/completions" {
				t.Fatalf("calls %+v, want one to /v1/chat/completions", calls)
			}
			up := gjson.ParseBytes(calls[0].body)
			if !up.Get("messages").IsArray() {
				t.Errorf("not a Chat Completions body: %s", calls[0].body)
			}
			for _, m := range []string{"input", "client_metadata", "include", "prompt_cache_key", "reasoning", "store", "x_unknown"} {
				if up.Get(m).Exists() {
					t.Errorf("member %s reached a Chat Completions provider: %s", m, calls[0].body)
				}
			}
			for _, tool := range up.Get("tools").Array() {
				if tool.Get("type").String() != "function" {
					t.Errorf("a %s tool reached a Chat Completions provider", tool.Get("type"))
				}
			}
			v := responsesSurface.plain(r)
			if stream {
				v = responsesSurface.stream(r)
				if !v.whole {
					t.Errorf("the stream did not end with response.completed: %q", r.frames)
				}
			}
			for _, p := range v.problems {
				t.Error(p)
			}
			if v.model != "respoff/ok" || v.text != openaifake.Answer {
				t.Errorf("model %q text %q", v.model, v.text)
			}
			if !v.report.Get("dropped").IsArray() || len(v.report.Get("dropped").Array()) == 0 {
				t.Errorf("the report names nothing dropped: %s", v.report.Raw)
			}
		})
	}
}

// A mixed chain on /v1/messages: the Anthropic provider fails with 529, the next model speaks Chat
// Completions, so the answer is translated into the Messages wire, with the failover report and what
// could not cross named.
func TestMixedChainMessages(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			body := `{"model":"anth/overloaded","fallback_models":["fake/ok"],` + claudeCodeBody
			if stream {
				body += `,"stream":true`
			}
			body += "}"
			r := e.post(t, nil, "/v1/messages", body, withHeaders(claudeCodeHeaders, "X-Api-Key", e.secret))
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			calls := e.anth.callsTo(anthOverloaded)
			if len(calls) != 1 {
				t.Fatalf("the Anthropic fake got %d calls, want 1", len(calls))
			}
			checkCallerBytes(t, []byte(body), calls[0].body, anthOverloaded, stream)
			chat := gjson.ParseBytes(e.up.LastBody("ok"))
			if !chat.Get("messages").IsArray() || chat.Get("thinking").Exists() || chat.Get("context_management").Exists() || chat.Get("system").Exists() {
				t.Errorf("fake/ok did not get a Chat Completions body: %s", chat.Raw)
			}
			if up := e.up.Calls(); len(up) > 0 {
				checkHeadersStay(t, claudeCodeHeaders, up[len(up)-1].Header)
			}
			checkMixed(t, r, messagesSurface, stream, []attempt{failed("anth/overloaded", "server_error"), served("fake/ok")},
				"thinking", "cache_control", "context_management", "output_config")
		})
	}
}

// A mixed chain on /v1/responses: the Responses provider fails with 500, the next is an Anthropic
// provider, so the request is translated to its Messages body and the answer back into the Responses wire.
func TestMixedChainResponses(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			body := `{"model":"resp/error-500","fallback_models":["anth/ok"],` + codexBody
			if stream {
				body += `,"stream":true`
			}
			body += "}"
			r := e.post(t, nil, "/v1/responses", body, withHeaders(codexHeaders, "Authorization", "Bearer "+e.secret))
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			first := e.resp.callsTo(respError500)
			if len(first) != 1 || first[0].path != "/v1/responses" {
				t.Fatalf("the Responses fake got %+v, want one call to /v1/responses", first)
			}
			checkCallerBytes(t, []byte(body), first[0].body, respError500, stream)
			second := e.anth.callsTo(anthOK)
			if len(second) != 1 {
				t.Fatalf("the Anthropic fake got %d calls, want 1", len(second))
			}
			m := gjson.ParseBytes(second[0].body)
			if !m.Get("messages").IsArray() || !m.Get("max_tokens").Exists() || m.Get("input").Exists() || m.Get("client_metadata").Exists() {
				t.Errorf("the Anthropic provider did not get a Messages body: %s", second[0].body)
			}
			checkHeadersStay(t, codexHeaders, second[0].header)
			checkMixed(t, r, responsesSurface, stream, []attempt{failed("resp/error-500", "server_error"), served("anth/ok")})
		})
	}
}

// checkMixed checks a translated answer after a failover: the surface's wire, the whole answer,
// the report, and dropped naming at least wantDropped.
func checkMixed(t *testing.T, r *result, s surface, stream bool, attempts []attempt, wantDropped ...string) {
	t.Helper()
	v := s.plain(r)
	if stream {
		v = s.stream(r)
		if !v.whole || v.failure.Exists() {
			t.Errorf("the stream is not whole: %q", r.frames)
		}
	}
	for _, p := range v.problems {
		t.Error(p)
	}
	served := attempts[len(attempts)-1].Model
	if v.model != served || v.text != openaifake.Answer || v.finish != "stop" || !v.usage {
		t.Errorf("model %q text %q finish %q usage %v; want %s's whole answer", v.model, v.text, v.finish, v.usage, served)
	}
	if got := attemptsOf(v.report.Get("failover.attempts")); !v.report.Get("failover.occurred").Bool() || !equalAttempts(got, attempts) {
		t.Errorf("report %s, want attempts %+v", v.report.Raw, attempts)
	}
	var dropped []string
	for _, d := range v.report.Get("dropped").Array() {
		dropped = append(dropped, d.String())
	}
	for _, w := range wantDropped {
		if !contains(dropped, w) {
			t.Errorf("dropped %v does not name %s", dropped, w)
		}
	}
	if s.v1 && (r.header.Get("X-SecureAI-Served-Model") != served || r.header.Get("X-SecureAI-Failover") != "true") {
		t.Errorf("report headers: served %q failover %q", r.header.Get("X-SecureAI-Served-Model"), r.header.Get("X-SecureAI-Failover"))
	}
	if !strings.HasPrefix(r.header.Get("Content-Type"), map[bool]string{false: "application/json", true: "text/event-stream"}[stream]) {
		t.Errorf("Content-Type %q", r.header.Get("Content-Type"))
	}
}

// callsTo returns the calls for upstream model.
func (f *wireFake) callsTo(model string) []wireCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []wireCall
	for _, c := range f.calls {
		if gjson.GetBytes(c.body, "model").String() == model {
			out = append(out, c)
		}
	}
	return out
}

// lastSent returns the events last streamed for model.
func (f *wireFake) lastSent(model string) []sseEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sent[model]
}

// lastPlain returns the body last answered for model.
func (f *wireFake) lastPlain(model string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.plain[model]
}
