package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/chain"
)

// TestChainOverHTTP checks SPEC 3.1–3.7 and 4 through the assembled gateway.
func TestChainOverHTTP(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	cases := []struct {
		name   string
		key    func(*apikey.Key)
		body   string // without messages unless it says so; {} members joined
		status int
		code   string
		param  string
		msg    string    // a substring of error.message
		served string    // 200: the served model
		report bool      // 200: secureai.failover expected
		tries  []attempt // attempts (report or error)
		zero   []string  // upstream ids that must have received no call
		json   bool      // the answer must be application/json (streaming requests included)
	}{
		{name: "all-rate-limited→429", body: `{"models":["fake/error-429","fake/error-429-retry-after"],` + msgs + `}`,
			status: 429, code: "all_models_failed", msg: "All 2 model attempt(s) failed (last: fake/error-429-retry-after — rate_limit)",
			tries: []attempt{failed("fake/error-429", "rate_limit"), failed("fake/error-429-retry-after", "rate_limit")}},
		{name: "all-rate-limited-streaming→429-json", body: `{"stream":true,"models":["fake/error-429","fake/error-429-retry-after"],` + msgs + `}`,
			status: 429, code: "all_models_failed", json: true, msg: "All 2 model attempt(s) failed (last: fake/error-429-retry-after — rate_limit)",
			tries: []attempt{failed("fake/error-429", "rate_limit"), failed("fake/error-429-retry-after", "rate_limit")}},
		{name: "mixed→502", body: `{"models":["fake/error-429","fake/error-500","down/refused"],` + msgs + `}`,
			status: 502, code: "all_models_failed", msg: "All 3 model attempt(s) failed (last: down/refused — connection_error)",
			tries: []attempt{failed("fake/error-429", "rate_limit"), failed("fake/error-500", "server_error"), failed("down/refused", "connection_error")}},
		{name: "mixed-streaming→502-json", body: `{"stream":true,"model":"fake/error-500","fallback_models":["fake/error-429"],` + msgs + `}`,
			status: 502, code: "all_models_failed", json: true, msg: "All 2 model attempt(s) failed (last: fake/error-429 — rate_limit)",
			tries: []attempt{failed("fake/error-500", "server_error"), failed("fake/error-429", "rate_limit")}},
		{name: "on-excludes-reason-stops", body: `{"models":["fake/error-500","fake/ok"],"redundancy":{"on":["rate_limit"]},` + msgs + `}`,
			status: 502, code: "all_models_failed", msg: "All 1 model attempt(s) failed (last: fake/error-500 — server_error)",
			tries: []attempt{failed("fake/error-500", "server_error")}, zero: []string{"ok"}},
		{name: "fallback_models-chain", body: `{"model":"fake/error-503","fallback_models":["fake/ok"],` + msgs + `}`,
			status: 200, served: "fake/ok", report: true, tries: []attempt{failed("fake/error-503", "server_error"), served("fake/ok")}},
		{name: "duplicates-collapse", body: `{"models":["fake/error-500","fake/error-500","fake/ok"],` + msgs + `}`,
			status: 200, served: "fake/ok", report: true, tries: []attempt{failed("fake/error-500", "server_error"), served("fake/ok")}},
		{name: "single-model-no-report", body: `{"model":"fake/ok",` + msgs + `}`, status: 200, served: "fake/ok"},
		{name: "single-model-failure-is-exhausted", body: `{"model":"fake/error-500",` + msgs + `}`,
			status: 502, code: "all_models_failed", msg: "All 1 model attempt(s) failed (last: fake/error-500 — server_error)",
			tries: []attempt{failed("fake/error-500", "server_error")}},
		{name: "key-failoverDefaults", key: func(k *apikey.Key) {
			k.FailoverDefaults = &chain.Defaults{Models: []string{"fake/error-500", "fake/error-429", "fake/ok"}}
		}, body: `{"model":"fake/error-429",` + msgs + `}`, status: 200, served: "fake/ok", report: true,
			tries: []attempt{failed("fake/error-429", "rate_limit"), served("fake/ok")}, zero: []string{"error-500"}},
		{name: "key-failoverDefaults-on", key: func(k *apikey.Key) {
			k.FailoverDefaults = &chain.Defaults{Models: []string{"fake/error-500", "fake/ok"}, On: []chain.Reason{chain.RateLimit}}
		}, body: `{"model":"fake/error-500",` + msgs + `}`, status: 502, code: "all_models_failed",
			tries: []attempt{failed("fake/error-500", "server_error")}, zero: []string{"ok"}},
		{name: "allowedModels-403-before-any-call", key: func(k *apikey.Key) { k.AllowedModels = []string{"fake/ok"} },
			body: `{"models":["fake/ok","fake/error-500"],` + msgs + `}`, status: 403, code: "model_not_allowed", param: "model", msg: "fake/error-500",
			zero: []string{"ok", "error-500"}},
		{name: "unknown-model-404-as-openai-answers", body: `{"models":["fake/ok","nope/nope"],` + msgs + `}`, status: 404, code: "model_not_found", param: "model", msg: "nope/nope", zero: []string{"ok"}},
		{name: "missing-messages", body: `{"model":"fake/ok"}`, status: 400, param: "messages", zero: []string{"ok"}},
		{name: "empty-messages", body: `{"model":"fake/ok","messages":[]}`, status: 400, param: "messages"},
		{name: "stream-not-bool", body: `{"model":"fake/ok","stream":"yes",` + msgs + `}`, status: 400, param: "stream"},
		{name: "missing-model", body: `{` + msgs + `}`, status: 400, param: "model"},
		{name: "models-with-fallbacks", body: `{"models":["fake/ok"],"fallback_models":["fake/tools"],` + msgs + `}`, status: 400, param: "fallback_models"},
		{name: "four-distinct-models", body: `{"models":["fake/ok","fake/tools","fake/error-500","fake/error-503"],` + msgs + `}`, status: 400, param: "models"},
		{name: "timeout-out-of-range", body: `{"model":"fake/ok","redundancy":{"timeout_ms":999},` + msgs + `}`, status: 400, param: "redundancy.timeout_ms"},
		{name: "first-token-out-of-range", body: `{"model":"fake/ok","redundancy":{"first_token_timeout_ms":60001},` + msgs + `}`, status: 400, param: "redundancy.first_token_timeout_ms"},
		{name: "unknown-trigger", body: `{"model":"fake/ok","redundancy":{"on":["bad_luck"]},` + msgs + `}`, status: 400, param: "redundancy.on"},
		{name: "unknown-entry-field", body: `{"models":[{"model":"fake/ok","retries":2}],` + msgs + `}`, status: 400, param: "models[0].retries"},
		{name: "entry-timeout-out-of-range", body: `{"models":[{"model":"fake/ok","timeout_ms":0}],` + msgs + `}`, status: 400, param: "models[0].timeout_ms"},
		{name: "not-an-object", body: `[1,2]`, status: 400},
		{name: "not-json", body: `{"model":`, status: 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			secret := e.secret
			if tc.key != nil {
				secret = e.keys.add(t, tc.key)
			}
			r := e.do(t, nil, secret, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s %q", r.status, tc.status, r.body, r.frames)
			}
			for _, m := range tc.zero {
				if n := e.up.Fake.Calls(m); n != 0 {
					t.Errorf("upstream %s received %d calls, want none", m, n)
				}
			}
			if tc.status == 200 {
				j := r.json()
				if got := j.Get("model").String(); got != tc.served {
					t.Errorf("model %q, want %q", got, tc.served)
				}
				if got := j.Get("secureai.served_model").String(); got != tc.served {
					t.Errorf("served_model %q, want %q", got, tc.served)
				}
				f := j.Get("secureai.failover")
				if f.Exists() != tc.report {
					t.Fatalf("secureai.failover present=%v, want %v: %s", f.Exists(), tc.report, j.Get("secureai").Raw)
				}
				if tc.report {
					if got := attemptsOf(f.Get("attempts")); !equalAttempts(got, tc.tries) {
						t.Errorf("attempts %+v, want %+v", got, tc.tries)
					}
				}
				return
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			j := r.json()
			if !j.Get("error").IsObject() || j.Get("error.message").String() == "" || j.Get("error.type").String() == "" {
				t.Fatalf("not an OpenAI error envelope: %s", r.body)
			}
			if tc.code != "" && j.Get("error.code").String() != tc.code {
				t.Errorf("error.code %q, want %q", j.Get("error.code"), tc.code)
			}
			if tc.param != "" && j.Get("error.param").String() != tc.param {
				t.Errorf("error.param %q, want %q (message %q)", j.Get("error.param"), tc.param, j.Get("error.message"))
			}
			if tc.msg != "" && !strings.Contains(j.Get("error.message").String(), tc.msg) {
				t.Errorf("error.message %q, want it to contain %q", j.Get("error.message"), tc.msg)
			}
			if tc.tries != nil {
				if got := attemptsOf(j.Get("error.attempts")); !equalAttempts(got, tc.tries) {
					t.Errorf("error.attempts %+v, want %+v", got, tc.tries)
				}
			}
		})
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	past := time.Now().Add(-time.Hour)
	future := time.Now().Add(time.Hour)
	revoked := e.keys.add(t, func(k *apikey.Key) { k.RevokedAt = &past })
	expired := e.keys.add(t, func(k *apikey.Key) { k.ExpiresAt = &past })
	notYetExpired := e.keys.add(t, func(k *apikey.Key) { k.ExpiresAt = &future })
	body := chatBody(t, []string{"fake/ok"}, false, nil)
	cases := []struct {
		name   string
		header string // the whole Authorization header; "" sends none
		status int
	}{
		{"missing", "", 401},
		{"not-bearer", "Basic " + e.secret, 401},
		{"malformed", "Bearer sk-123", 401},
		{"malformed-non-hex", "Bearer sk-" + strings.Repeat("z", 64), 401},
		{"unknown", "Bearer sk-" + strings.Repeat("a", 64), 401},
		{"revoked", "Bearer " + revoked, 401},
		{"expired", "Bearer " + expired, 401},
		{"valid", "Bearer " + e.secret, 200},
		{"valid-with-expiry", "Bearer " + notYetExpired, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, e.url+"/v1/chat/completions", strings.NewReader(body))
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
		})
	}
	if n := e.up.Fake.Calls("ok"); n != 2 {
		t.Errorf("upstream received %d calls, want 2 (the valid keys only)", n)
	}
}

func TestModelsEndpoint(t *testing.T) {
	e := newEnv(t)
	only := e.keys.add(t, func(k *apikey.Key) { k.AllowedModels = []string{"fake/ok", "fake/tools"} })
	req, _ := http.NewRequest(http.MethodGet, e.url+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+only)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = ioCopy(&b, resp)
	if resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("status %d, request id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}
	got := gjsonIDs(b.String())
	if strings.Join(got, ",") != "fake/ok,fake/tools" {
		t.Errorf("models %v, want exactly the key's allowed ones", got)
	}
}

func TestBodyTooLarge(t *testing.T) {
	e := newEnv(t, func(c *envConfig) { c.maxBody = 4096 })
	big := chatBody(t, []string{"fake/ok"}, false, map[string]any{"foo": strings.Repeat("x", 8192)})
	r := e.chat(t, big)
	if r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413: %s", r.status, r.body)
	}
	if r.json().Get("error.message").String() == "" {
		t.Errorf("413 without an error envelope: %s", r.body)
	}
	if n := e.up.Fake.Calls("ok"); n != 0 {
		t.Errorf("upstream called %d times for an oversized body", n)
	}
}

func TestAllRateLimitedAnswerSaysWhenToRetry(t *testing.T) {
	e := newEnv(t)
	for _, stream := range []string{"false", "true"} {
		r := e.chat(t, `{"stream":`+stream+`,"models":["fake/error-429","fake/error-429-retry-after"],"messages":[{"role":"user","content":"hi"}]}`)
		if r.status != 429 || r.header.Get("Retry-After") != "2" {
			t.Errorf("stream=%s: status %d, Retry-After %q; want 429 with the provider's Retry-After 2", stream, r.status, r.header.Get("Retry-After"))
		}
	}
	r := e.chat(t, `{"models":["fake/error-429","fake/error-500"],"messages":[{"role":"user","content":"hi"}]}`)
	if r.status != 502 || r.header.Get("Retry-After") != "" {
		t.Errorf("mixed: status %d, Retry-After %q; want 502 without Retry-After", r.status, r.header.Get("Retry-After"))
	}
}
