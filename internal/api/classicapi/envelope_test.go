package classicapi_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/policy"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
)

var (
	envelopeKeys = []string{"success", "id", "object", "created", "model", "choices", "usage", "metadata"}
	usageKeys    = []string{"prompt_tokens", "completion_tokens", "total_tokens", "input_tokens", "output_tokens"}
	metadataKeys = []string{"conversation_id", "index_used", "smltp_policy_used", "smltp_policy_source", "smltp_policy_hash",
		"served_model", "requested_model", "rag_enabled", "documents_retrieved", "sources"}
)

func sameKeys(t *testing.T, what string, m map[string]any, want []string) {
	t.Helper()
	got := keys(m)
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s keys = %v, want %v", what, got, want)
	}
}

// policyHash is the hash the named built-in policy carries (its stability is package policy's
// test); the envelope must name the policy that applied.
func policyHash(name string) string {
	a, _ := policy.BuiltinSet.Lookup(name)
	return a.Hash
}

// TestEnvelope asserts SPEC section 5's success envelope on a plain and a failover answer.
func TestEnvelope(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, body                 string
		served, requested          string
		failover                   []string // "model:status:reason" per attempt; nil: no report
		conversation, policy, pSrc string
	}{
		{name: "plain single model", body: `{"model":"fake/ok","index":"Zero-Knowledge","prompt":"hi"}`,
			served: "fake/ok", requested: "fake/ok", policy: "public", pSrc: "default"},
		{name: "failover from a 500 to a healthy model", body: `{"models":["fake/error-500","fake/ok"],"index":"Zero-Knowledge","prompt":"hi","conversation_id":"conv-7","smltp_policy":"internal"}`,
			served: "fake/ok", requested: "fake/error-500", failover: []string{"fake/error-500:failed:server_error", "fake/ok:served:"},
			conversation: "conv-7", policy: "internal", pSrc: "request"},
		{name: "multi-model chain whose first model served still reports", body: `{"model":"fake/ok","fallback_models":["fake/error-500"],"index":"Zero-Knowledge","prompt":"hi"}`,
			served: "fake/ok", requested: "fake/ok", failover: []string{"fake/ok:served:"}, policy: "public", pSrc: "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.post(t, e.user, tt.body)
			if res.status != 200 {
				t.Fatalf("status %d: %s", res.status, res.body)
			}
			if ct := res.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			m := res.json(t)
			sameKeys(t, "envelope", m, envelopeKeys)
			if m["success"] != true || m["object"] != "chat.completion" || m["model"] != tt.served {
				t.Errorf("success/object/model = %v/%v/%v", m["success"], m["object"], m["model"])
			}
			if id, _ := m["id"].(string); !strings.HasPrefix(id, "chatcmpl-") || len(id) < 20 {
				t.Errorf("id = %v", m["id"])
			}
			if c, _ := m["created"].(float64); c < 1.7e9 {
				t.Errorf("created = %v", m["created"])
			}
			choices, _ := m["choices"].([]any)
			if len(choices) != 1 {
				t.Fatalf("choices = %v", m["choices"])
			}
			msg := choices[0].(map[string]any)["message"].(map[string]any)
			if msg["content"] != openaifake.Answer || choices[0].(map[string]any)["finish_reason"] != "stop" {
				t.Errorf("choice = %v", choices[0])
			}
			u := m["usage"].(map[string]any)
			sameKeys(t, "usage", u, usageKeys)
			if u["prompt_tokens"] != u["input_tokens"] || u["completion_tokens"] != u["output_tokens"] ||
				u["total_tokens"].(float64) != u["prompt_tokens"].(float64)+u["completion_tokens"].(float64) || u["prompt_tokens"].(float64) != 12 {
				t.Errorf("usage = %v", u)
			}
			md := m["metadata"].(map[string]any)
			want := metadataKeys
			if tt.failover != nil {
				want = append(slices.Clone(want), "failover")
			}
			sameKeys(t, "metadata", md, want)
			if md["served_model"] != tt.served || md["requested_model"] != tt.requested || md["index_used"] != "Zero-Knowledge" {
				t.Errorf("served/requested/index = %v/%v/%v", md["served_model"], md["requested_model"], md["index_used"])
			}
			if md["smltp_policy_used"] != tt.policy || md["smltp_policy_source"] != tt.pSrc || md["smltp_policy_hash"] != policyHash(tt.policy) {
				t.Errorf("policy = %v/%v/%v", md["smltp_policy_used"], md["smltp_policy_source"], md["smltp_policy_hash"])
			}
			if md["rag_enabled"] != false || md["documents_retrieved"] != float64(0) || len(md["sources"].([]any)) != 0 {
				t.Errorf("rag fields = %v/%v/%v", md["rag_enabled"], md["documents_retrieved"], md["sources"])
			}
			conv, _ := md["conversation_id"].(string)
			if tt.conversation != "" && conv != tt.conversation || tt.conversation == "" && !strings.HasPrefix(conv, "conv_") {
				t.Errorf("conversation_id = %q, want %q (or generated)", conv, tt.conversation)
			}
			if tt.failover != nil {
				checkReport(t, md["failover"], tt.failover)
			}
		})
	}
}

// checkReport compares a failover report with "model:status:reason" lines; occurred is true
// exactly when some attempt failed before the served one (or the chain was exhausted).
func checkReport(t *testing.T, v any, want []string) {
	t.Helper()
	r, ok := v.(map[string]any)
	occurred := len(want) > 1 || !strings.Contains(want[0], ":served:")
	if !ok || r["occurred"] != occurred {
		t.Fatalf("failover = %v", v)
	}
	atts := r["attempts"].([]any)
	var got []string
	for _, a := range atts {
		a := a.(map[string]any)
		reason, _ := a["reason"].(string)
		got = append(got, a["model"].(string)+":"+a["status"].(string)+":"+reason)
		if _, ok := a["latency_ms"].(float64); !ok {
			t.Errorf("attempt without latency_ms: %v", a)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("attempts = %v, want %v", got, want)
	}
}

// TestExhaustedChain: every attempt failed → 429 when all were rate limits, else 502, with the
// attempts, in the classic error envelope (SPEC 3.7).
func TestExhaustedChain(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, models string
		status       int
		attempts     []string
		msg          string
	}{
		{"mixed failures are 502", `["fake/error-500","fake/error-503","fake/error-429"]`, 502,
			[]string{"fake/error-500:failed:server_error", "fake/error-503:failed:server_error", "fake/error-429:failed:rate_limit"},
			"All 3 model attempt(s) failed (last: fake/error-429 — rate_limit)"},
		{"only rate limits are 429", `["fake/error-429","fake/error-429-retry-after"]`, 429,
			[]string{"fake/error-429:failed:rate_limit", "fake/error-429-retry-after:failed:rate_limit"},
			"All 2 model attempt(s) failed (last: fake/error-429-retry-after — rate_limit)"},
	}
	for _, stream := range []bool{false, true} {
		for _, tt := range tests {
			name := tt.name
			extra := ""
			if stream {
				name, extra = "streaming "+name, `,"stream":true`
			}
			t.Run(name, func(t *testing.T) {
				res := e.post(t, e.user, `{"models":`+tt.models+`,"index":"Zero-Knowledge","prompt":"hi"`+extra+`}`)
				if res.status != tt.status {
					t.Fatalf("status = %d, want %d: %s", res.status, tt.status, res.body)
				}
				m := res.json(t)
				sameKeys(t, "error", m, []string{"success", "error", "message", "request_id", "attempts"})
				if m["success"] != false || m["error"] != "All model attempts failed" || m["message"] != tt.msg || m["request_id"] != res.header.Get("X-Request-Id") {
					t.Errorf("error envelope = %s", res.body)
				}
				checkReport(t, map[string]any{"occurred": true, "attempts": m["attempts"]}, tt.attempts)
			})
		}
	}
}

// TestProviderRefusal: a final provider error (context too long) is returned as is, with the
// attempts so far, and never fails over.
func TestProviderRefusal(t *testing.T) {
	e := newEnv(t)
	res := e.post(t, e.user, `{"models":["fake/context-length","fake/ok"],"index":"Zero-Knowledge","prompt":"hi"}`)
	if res.status != 400 {
		t.Fatalf("status = %d: %s", res.status, res.body)
	}
	m := res.json(t)
	if m["success"] != false || !strings.Contains(m["message"].(string), "maximum context length") {
		t.Errorf("body = %s", res.body)
	}
	checkReport(t, map[string]any{"occurred": true, "attempts": m["attempts"]}, []string{"fake/context-length:failed:rejected"})
	if e.fake.Calls("ok") != 0 {
		t.Error("a final error failed over")
	}
}
