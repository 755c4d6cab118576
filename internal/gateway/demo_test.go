package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
	"github.com/tidwall/gjson"
)

// The README's demo examples of the opt-in extensions answer as the README says, on the built-in
// demo provider.
func TestDemoShowsTheExtensions(t *testing.T) {
	cat, stop, err := gateway.Catalog("", true)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	url := gatewaykit.Bare(t, gatewaykit.Deps(cat, oneKey{}))
	post := func(body string) string {
		req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+apikey.NewSecret())
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}

	raw := post(`{"models":["demo/cut","demo/continue"],"stream":true,"redundancy":{"on_interrupt":"resume"},"messages":[{"role":"user","content":"hi"}]}`)
	var text strings.Builder
	var resumed gjson.Result
	for _, line := range strings.Split(raw, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && data != "[DONE]" {
			text.WriteString(gjson.Get(data, "choices.0.delta.content").String())
			if a := gjson.Get(data, "secureai.failover.attempts.1"); a.Exists() {
				resumed = a
			}
		}
	}
	if text.String() != openaifake.Answer || resumed.Get("status").String() != "resumed" || resumed.Get("model").String() != "demo/continue" {
		t.Errorf("resume demo: text %q, report %s", text.String(), resumed.Raw)
	}

	body := gjson.Parse(post(`{"models":["demo/context-length","demo/ok"],"redundancy":{"on":["context_length"]},"messages":[{"role":"user","content":"hi"}]}`))
	if body.Get("secureai.served_model").String() != "demo/ok" || body.Get("secureai.failover.attempts.0.reason").String() != "context_length" {
		t.Errorf("context_length demo: %s", body.Raw)
	}

	start := time.Now()
	body = gjson.Parse(post(`{"models":["demo/slow-first-token","demo/ok"],"redundancy":{"hedge_after_ms":500},"messages":[{"role":"user","content":"hi"}]}`))
	if body.Get("secureai.served_model").String() != "demo/ok" || body.Get("secureai.failover.attempts.0.status").String() != "cancelled" ||
		body.Get("secureai.failover.attempts.0.reason").String() != "hedge_lost" || time.Since(start) > 10*time.Second {
		t.Errorf("hedge demo (%s): %s", time.Since(start), body.Raw)
	}

	body = gjson.Parse(post(`{"model":"demo/deployed","messages":[{"role":"user","content":"hi"}]}`))
	attempts := body.Get("secureai.failover.attempts")
	if body.Get("secureai.served_model").String() != "demo/deployed" || attempts.Get("#").Int() != 2 ||
		attempts.Get("0.provider").String() != "demo-primary" || attempts.Get("0.reason").String() != "server_error" ||
		attempts.Get("1.provider").String() != "demo-secondary" || attempts.Get("1.status").String() != "served" {
		t.Errorf("deployments demo: %s", body.Raw)
	}
}
