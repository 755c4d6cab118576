package e2e

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// callerFields are members the gateway must pass to the provider untouched (SPEC 4), an unknown
// one included.
const callerFields = `"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Weather in Paris?"}],
	"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],
	"tool_choice":"auto","parallel_tool_calls":false,"response_format":{"type":"json_object"},"stop":["\n\n","END"],
	"seed":42,"logprobs":true,"top_logprobs":2,"top_p":0.9,"frequency_penalty":0.1,"presence_penalty":-0.2,
	"user":"end-user-7","max_completion_tokens":77,"temperature":0.3,"foo":{"bar":[1,2,{"baz":null}]}`

const gatewayFields = `"models":["fake/error-500",{"model":"fake/ok","timeout_ms":5000}],"redundancy":{"timeout_ms":3000},
	"smltp_policy":"internal","user_id":"u1"`

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("upstream body is not JSON: %v\n%s", err, b)
	}
	return m
}

func TestPassthrough(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "stream"}[stream]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			body := "{" + callerFields + "," + gatewayFields
			if stream {
				body += `,"stream":true,"stream_options":{"include_usage":false,"x_opt":1}`
			}
			body += "}"
			r := e.chat(t, body)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			want := decode(t, []byte(body))
			for _, f := range []string{"models", "fallback_models", "redundancy", "smltp_policy", "user_id"} {
				delete(want, f)
			}
			if stream {
				// The adapter asks for usage so the served model can be billed; the caller's
				// usage chunk is still withheld (checked in TestFaults), its other options kept.
				want["stream_options"] = map[string]any{"include_usage": true, "x_opt": float64(1)}
			}
			first, second := e.up.LastBody("error-500"), e.up.LastBody("ok")
			for model, got := range map[string][]byte{"error-500": first, "ok": second} {
				want["model"] = model
				if g := decode(t, got); !reflect.DeepEqual(g, want) {
					gj, _ := json.Marshal(g)
					wj, _ := json.Marshal(want)
					t.Errorf("upstream %s received\n%s\nwant\n%s", model, gj, wj)
				}
			}
			// Attempts translate the same caller bytes afresh: the second attempt's body equals the
			// first's but for the model.
			if a, b := strings.Replace(string(first), `"error-500"`, `"ok"`, 1), string(second); a != b {
				t.Errorf("second attempt's body differs from the first's beyond model:\n%s\n%s", a, b)
			}
		})
	}
}

// TestStreamPassthrough compares what the caller receives with what the provider sent for the same
// request: chunks pass untouched but for model (the served model) and secureai (first chunk only).
func TestStreamPassthrough(t *testing.T) {
	for _, tc := range []struct {
		model string
		usage bool
	}{{"tools", false}, {"tools", true}, {"ok", false}, {"ok", true}} {
		name := tc.model
		if tc.usage {
			name += "+usage"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			extra := map[string]any{}
			if tc.usage {
				extra["stream_options"] = map[string]any{"include_usage": true}
			}
			r := e.chat(t, chatBody(t, []string{"fake/error-503", "fake/" + tc.model}, true, extra))
			if r.status != 200 || !r.done() {
				t.Fatalf("status %d frames %q", r.status, r.frames)
			}
			// Ask the provider directly, as the gateway did.
			direct := directStream(t, e, e.up.LastBody(tc.model))
			if !tc.usage {
				direct = direct[:len(direct)-1] // the usage chunk the gateway asked for is withheld
			}
			got := r.chunks()
			if len(got) != len(direct) {
				t.Fatalf("caller got %d chunks, provider sent %d (wanted usage: %v)\n%q", len(got), len(direct), tc.usage, r.frames)
			}
			for i := range got {
				if m := got[i].Get("model").String(); m != "fake/"+tc.model {
					t.Errorf("chunk %d model %q", i, m)
				}
				sec := got[i].Get("secureai")
				if (i == 0) != sec.Exists() {
					t.Errorf("chunk %d: secureai present=%v; want it on the first chunk only", i, sec.Exists())
				}
				if i == 0 && !sec.Get("failover.occurred").Bool() {
					t.Errorf("first chunk's secureai does not report the failover: %s", sec.Raw)
				}
				g, d := decode(t, []byte(got[i].Raw)), decode(t, []byte(direct[i]))
				delete(g, "model")
				delete(g, "secureai")
				delete(d, "model")
				if !reflect.DeepEqual(g, d) {
					t.Errorf("chunk %d altered:\n got %s\nsent %s", i, got[i].Raw, direct[i])
				}
			}
			if tc.model == "tools" {
				var args strings.Builder
				for _, c := range got {
					args.WriteString(c.Get("choices.0.delta.tool_calls.0.function.arguments").String())
				}
				if args.String() != `{"city":"Paris"}` {
					t.Errorf("tool call arguments %q", args.String())
				}
				if f := got[len(got)-1-btoi(tc.usage)].Get("choices.0.finish_reason").String(); f != "tool_calls" {
					t.Errorf("finish_reason %q, want tool_calls", f)
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// directStream posts body to the fake upstream and returns its chunk payloads ([DONE] excluded).
func directStream(t *testing.T, e *env, body []byte) []string {
	t.Helper()
	resp, err := http.Post(e.upstreamURL+"/chat/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []string
	var b strings.Builder
	_, _ = ioCopy(&b, resp)
	for _, line := range strings.Split(b.String(), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" && gjson.Valid(d) {
			out = append(out, d)
		}
	}
	return out
}

func TestOnBehalfOfNeedsAdmin(t *testing.T) {
	e := newEnv(t)
	r := e.chat(t, `{"model":"fake/ok","user_id":"someone-else","messages":[{"role":"user","content":"hi"}]}`)
	if r.status != http.StatusForbidden || r.json().Get("error.param").Str != "user_id" {
		t.Fatalf("status %d %s, want 403 naming user_id", r.status, r.body)
	}
	if n := e.up.Fake.Calls("ok"); n != 0 {
		t.Errorf("upstream called %d times, want 0", n)
	}
}

func TestSecureaiNamesThePolicy(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ body, policy, source string }{
		{`{"model":"fake/ok","messages":[{"role":"user","content":"hi"}]}`, "public", "default"},
		{`{"model":"fake/ok","smltp_policy":"internal","messages":[{"role":"user","content":"hi"}]}`, "internal", "request"},
	} {
		r := e.chat(t, tc.body)
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		s := r.json().Get("secureai")
		if s.Get("smltp_policy_used").Str != tc.policy || s.Get("smltp_policy_source").Str != tc.source || len(s.Get("smltp_policy_hash").Str) != 64 {
			t.Errorf("secureai = %s, want policy %s from %s with a sha256 hash", s.Raw, tc.policy, tc.source)
		}
	}
	r := e.chat(t, `{"model":"fake/ok","smltp_policy":"secret-sauce","messages":[{"role":"user","content":"hi"}]}`)
	if r.status != 400 || r.json().Get("error.param").Str != "smltp_policy" {
		t.Errorf("unknown policy: status %d %s, want 400 naming smltp_policy", r.status, r.body)
	}
}

func TestFieldsTheTranslatorsNeedAreChecked(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ name, body, param string }{
		{"temperature must be a number", `"temperature":"warm"`, "temperature"},
		{"temperature at most 2", `"temperature":2.5`, "temperature"},
		{"top_p at most 1", `"top_p":1.5`, "top_p"},
		{"max_tokens a positive integer", `"max_tokens":0`, "max_tokens"},
		{"max_completion_tokens an integer", `"max_completion_tokens":1.5`, "max_completion_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.chat(t, `{"model":"fake/ok","messages":[{"role":"user","content":"hi"}],`+tc.body+`}`)
			if r.status != 400 || r.json().Get("error.param").Str != tc.param {
				t.Errorf("status %d %s, want 400 naming %s", r.status, r.body, tc.param)
			}
		})
	}
	r := e.chat(t, `{"model":"fake/ok","messages":[{"role":"user","content":"hi"},"oops"]}`)
	if r.status != 400 || r.json().Get("error.param").Str != "messages[1]" {
		t.Errorf("a message that is not an object: status %d %s, want 400 naming messages[1]", r.status, r.body)
	}
	if n := e.up.Fake.Calls("ok"); n != 0 {
		t.Errorf("upstream called %d times for invalid requests, want 0", n)
	}
}
