package classicapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/tidwall/gjson"
)

// base is a valid body with its last brace open, so cases can add or override members.
const base = `{"model":"fake/ok","index":"Zero-Knowledge"`

func messages(n int, roles ...string) string {
	ms := make([]string, n)
	for i := range ms {
		role := "user"
		if i < len(roles) {
			role = roles[i]
		}
		ms[i] = fmt.Sprintf(`{"role":%q,"content":"m%d"}`, role, i)
	}
	return "[" + strings.Join(ms, ",") + "]"
}

// TestValidation covers every input rule of SPEC section 5: each is a clear classic error
// {success:false, error, message, request_id} and nothing reaches the provider.
func TestValidation(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("x", 128<<10)
	tests := []struct {
		name    string
		secret  string // default: the normal key
		body    string
		headers []string
		status  int
		title   string
		inMsg   string // a substring the message must contain
	}{
		{name: "missing index is 400 Index required", body: `{"model":"fake/ok","prompt":"hi"}`, status: 400, title: "Index required", inMsg: "index is required"},
		{name: "empty index is 400 Index required", body: `{"model":"fake/ok","index":"","prompt":"hi"}`, status: 400, title: "Index required"},
		{name: "index that is not a string", body: `{"model":"fake/ok","index":7,"prompt":"hi"}`, status: 400, inMsg: "index must be a string"},
		{name: "another index says knowledge bases are not available", body: `{"model":"fake/ok","index":"my-docs","prompt":"hi"}`, status: 400, title: "Index not available", inMsg: "knowledge bases are not available"},
		{name: "prompt and messages together", body: base + `,"prompt":"hi","messages":` + messages(1) + `}`, status: 400, inMsg: "prompt or messages, not both"},
		{name: "neither prompt nor messages", body: base + `}`, status: 400, inMsg: "prompt or messages is required"},
		{name: "empty prompt", body: base + `,"prompt":""}`, status: 400, inMsg: "prompt must be a non-empty string"},
		{name: "messages not an array", body: base + `,"messages":"hi"}`, status: 400, inMsg: "messages must be an array"},
		{name: "empty messages", body: base + `,"messages":[]}`, status: 400, inMsg: "must not be empty"},
		{name: "more than 100 messages", body: base + `,"messages":` + messages(101) + `}`, status: 400, inMsg: "at most 100 messages"},
		{name: "more than 256 KB of content", body: base + `,"messages":[{"role":"user","content":"` + big + `"},{"role":"assistant","content":"` + big + `"},{"role":"user","content":"x"}]}`, status: 400, inMsg: "256 KB"},
		{name: "prompt and system_message over 256 KB", body: base + `,"system_message":"` + big + `","prompt":"` + big + `x"}`, status: 400, inMsg: "256 KB"},
		{name: "two system messages", body: base + `,"messages":` + messages(3, "system", "user", "system") + `}`, status: 400, inMsg: "only one system message"},
		{name: "system message not first", body: base + `,"messages":` + messages(2, "user", "system") + `}`, status: 400, inMsg: "only as the first message"},
		{name: "system_message with an in-band system message", body: base + `,"system_message":"be brief","messages":` + messages(2, "system", "user") + `}`, status: 400, inMsg: "not both"},
		{name: "system_message not a string", body: base + `,"system_message":1,"prompt":"hi"}`, status: 400, inMsg: "system_message must be a string"},
		{name: "role outside system/user/assistant", body: base + `,"messages":` + messages(1, "tool") + `}`, status: 400, inMsg: "messages[0].role must be one of system, user, assistant"},
		{name: "message without a role", body: base + `,"messages":[{"content":"hi"}]}`, status: 400, inMsg: "messages[0].role"},
		{name: "message content not a string", body: base + `,"messages":[{"role":"user","content":[1]}]}`, status: 400, inMsg: "messages[0].content must be a string"},
		{name: "message with an unknown field", body: base + `,"messages":[{"role":"user","content":"hi","name":"x"}]}`, status: 400, inMsg: "messages[0].name: unknown field"},
		{name: "message not an object", body: base + `,"messages":["hi"]}`, status: 400, inMsg: "messages[0] must be"},
		{name: "unknown top-level field", body: base + `,"prompt":"hi","max_token":5}`, status: 400, inMsg: "max_token: unknown field"},
		// Issue 34.4: one answer per request, priced and reserved as one; the classic endpoint has no n.
		{name: "n asking for several answers names n", body: base + `,"prompt":"hi","n":2}`, status: 400, inMsg: "n: unknown field"},
		{name: "best_of names best_of", body: base + `,"prompt":"hi","best_of":2}`, status: 400, inMsg: "best_of: unknown field"},
		{name: "temperature not a number", body: base + `,"prompt":"hi","temperature":"hot"}`, status: 400, inMsg: "temperature must be a number"},
		{name: "max_tokens zero", body: base + `,"prompt":"hi","max_tokens":0}`, status: 400, inMsg: "max_tokens must be a positive integer"},
		{name: "max_tokens fractional", body: base + `,"prompt":"hi","max_tokens":1.5}`, status: 400, inMsg: "max_tokens must be a positive integer"},
		{name: "stream not a boolean", body: base + `,"prompt":"hi","stream":"yes"}`, status: 400, inMsg: "stream must be a boolean"},
		{name: "conversation_id not a string", body: base + `,"prompt":"hi","conversation_id":5}`, status: 400, inMsg: "conversation_id must be"},
		{name: "unknown smltp_policy names the field", body: base + `,"prompt":"hi","smltp_policy":"top-secret"}`, status: 400, inMsg: "smltp_policy"},
		{name: "models with fallback_models", body: base + `,"prompt":"hi","models":["fake/ok"],"fallback_models":["fake/ok"]}`, status: 400, inMsg: "fallback_models"},
		{name: "redundancy timeout out of range", body: base + `,"prompt":"hi","redundancy":{"timeout_ms":5}}`, status: 400, inMsg: "redundancy.timeout_ms"},
		{name: "unknown chain entry field", body: base + `,"prompt":"hi","models":[{"model":"fake/ok","retries":2}]}`, status: 400, inMsg: "models[0].retries"},
		{name: "missing model", body: `{"index":"Zero-Knowledge","prompt":"hi"}`, status: 400, inMsg: "model"},
		{name: "unknown model", body: `{"model":"fake/nope","index":"Zero-Knowledge","prompt":"hi"}`, status: 400, title: "Unknown model"},
		{name: "user_id for another user with a normal key", body: base + `,"prompt":"hi","user_id":"someone-else"}`, status: 403, title: "Access denied", inMsg: "user_id"},
		{name: "body not a JSON object", body: `[1,2]`, status: 400, inMsg: "JSON object"},
		{name: "malformed Idempotency-Key", body: base + `,"prompt":"hi"}`, headers: []string{"Idempotency-Key", "has spaces"}, status: 400, inMsg: "Idempotency-Key"},
		{name: "two Idempotency-Key headers", body: base + `,"prompt":"hi"}`, headers: []string{"Idempotency-Key", "a", "Idempotency-Key", "b"}, status: 400, inMsg: "single Idempotency-Key"},
		{name: "missing API key is 401 in the classic envelope", secret: "-", body: base + `,"prompt":"hi"}`, status: 401, title: "Invalid API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret := e.user
			if tt.secret == "-" {
				secret = ""
			}
			res := e.post(t, secret, tt.body, tt.headers...)
			if res.status != tt.status {
				t.Fatalf("status = %d, want %d: %s", res.status, tt.status, res.body)
			}
			var p struct {
				Success   *bool           `json:"success"`
				Error     string          `json:"error"`
				Message   string          `json:"message"`
				RequestID string          `json:"request_id"`
				Attempts  json.RawMessage `json:"attempts"`
			}
			if err := json.Unmarshal(res.body, &p); err != nil {
				t.Fatalf("not JSON: %s", res.body)
			}
			if p.Success == nil || *p.Success || p.Error == "" || p.Message == "" {
				t.Errorf("not a classic error envelope: %s", res.body)
			}
			if p.RequestID == "" || p.RequestID != res.header.Get("X-Request-Id") {
				t.Errorf("request_id = %q, X-Request-Id = %q", p.RequestID, res.header.Get("X-Request-Id"))
			}
			if tt.title != "" && p.Error != tt.title {
				t.Errorf("error = %q, want %q", p.Error, tt.title)
			}
			if !strings.Contains(p.Message, tt.inMsg) {
				t.Errorf("message = %q, want it to contain %q", p.Message, tt.inMsg)
			}
			if p.Attempts != nil {
				t.Errorf("a validation error carries attempts: %s", p.Attempts)
			}
		})
	}
	if n := e.fake.Calls("ok"); n != 0 {
		t.Errorf("the provider was called %d times by invalid requests", n)
	}
}

// TestUpstreamBody checks what the provider receives: defaults, clamps, prompt and system_message
// turned into messages, and the gateway's own fields kept away from it.
func TestUpstreamBody(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, body, want string
	}{
		{"defaults temperature 0.7 and max_tokens 1000", base + `,"prompt":"hi"}`,
			`{"model":"ok","messages":[{"role":"user","content":"hi"}],"temperature":0.7,"max_tokens":1000}`},
		{"temperature clamped to 2 and max_tokens capped at 4000", base + `,"prompt":"hi","temperature":5,"max_tokens":100000}`,
			`{"model":"ok","messages":[{"role":"user","content":"hi"}],"temperature":2,"max_tokens":4000}`},
		{"negative temperature clamped to 0", base + `,"prompt":"hi","temperature":-1,"max_tokens":5}`,
			`{"model":"ok","messages":[{"role":"user","content":"hi"}],"temperature":0,"max_tokens":5}`},
		{"system_message goes first", base + `,"system_message":"be brief","messages":[{"role":"user","content":"a\"b"},{"role":"assistant","content":"c"},{"role":"user","content":"d"}]}`,
			`{"model":"ok","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"a\"b"},{"role":"assistant","content":"c"},{"role":"user","content":"d"}],"temperature":0.7,"max_tokens":1000}`},
		{"gateway fields never reach the provider", base + `,"prompt":"hi","smltp_policy":"internal","conversation_id":"c1","user_id":"u1","redundancy":{"timeout_ms":20000}}`,
			`{"model":"ok","messages":[{"role":"user","content":"hi"}],"temperature":0.7,"max_tokens":1000}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.post(t, e.user, tt.body)
			if res.status != 200 {
				t.Fatalf("status %d: %s", res.status, res.body)
			}
			if got := string(e.lastBody("ok")); got != tt.want {
				t.Errorf("upstream body\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestOnBehalfOf: user_id is the key's own user for anyone; any user only for an admin key.
func TestOnBehalfOf(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, secret, user string
		status             int
	}{
		{"normal key naming its own user", e.user, "u1", 200},
		{"normal key naming another user", e.user, "u2", 403},
		{"admin key naming any user", e.admin, "u2", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.post(t, tc.secret, base+`,"prompt":"hi","user_id":"`+tc.user+`"}`)
			if res.status != tc.status {
				t.Errorf("status = %d, want %d: %s", res.status, tc.status, res.body)
			}
		})
	}
}

// The completion is told the max_tokens the upstream body carries: the default when unset, the
// cap when above it.
func TestCompletionCarriesMaxTokens(t *testing.T) {
	for extra, want := range map[string]int{
		``:                   classicapi.DefaultMaxTokens,
		`,"max_tokens":50`:   50,
		`,"max_tokens":9000`: classicapi.MaxMaxTokens,
	} {
		in, err := classicapi.Parse([]byte(base + `,"prompt":"hi"` + extra + `}`))
		if err != nil {
			t.Fatalf("%q: %v", extra, err)
		}
		if got := in.MaxTokens; got != want {
			t.Errorf("%q: MaxTokens %d, want %d", extra, got, want)
		}
		if got := gjson.GetBytes(in.Body, "max_tokens").Int(); got != int64(want) {
			t.Errorf("%q: upstream max_tokens %d, want %d", extra, got, want)
		}
	}
}
