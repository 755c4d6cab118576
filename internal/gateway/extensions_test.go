package gateway_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
	"github.com/tidwall/gjson"
)

// The opt-in extensions through the OpenAI surface, against the fault-injecting fake provider.
func TestFailoverExtensionsThroughTheGateway(t *testing.T) {
	fake := openaifake.New(300 * time.Millisecond)
	up := httptest.NewServer(fake)
	defer up.Close()
	windows := map[string]int{"context-length": 8000, "ok": 4000, "tools": 100000, "error-429-retry-after": 8000}
	cat := gatewaykit.OneFake(up.URL+"/v1", openaifake.Models...)
	for _, m := range cat.Models {
		m.ContextWindow = windows[m.Upstream]
	}
	url := gatewaykit.Bare(t, gatewaykit.Deps(cat, oneKey{}))
	post := func(body string) (int, gjson.Result) {
		status, _, b := gatewaykit.Call(t, "POST", url+"/v1/chat/completions", apikey.NewSecret(), body)
		return status, b
	}
	msgs := `"messages":[{"role":"user","content":"hi"}]`

	t.Run("context_length not in on: the provider's refusal is final, as in the seed", func(t *testing.T) {
		status, body := post(`{"models":["fake/context-length","fake/tools"],` + msgs + `}`)
		if status != 400 || body.Get("error.code").String() != "context_length_exceeded" || fake.Calls("tools") != 0 {
			t.Errorf("%d %s", status, body.Raw)
		}
	})
	t.Run("context_length in on: only to a larger window, smaller ones passed over", func(t *testing.T) {
		status, body := post(`{"models":["fake/context-length","fake/ok","fake/tools"],"redundancy":{"on":["context_length"]},` + msgs + `}`)
		a := body.Get("secureai.failover.attempts").Array()
		if status != 200 || body.Get("secureai.served_model").String() != "fake/tools" || len(a) != 3 ||
			a[0].Get("reason").String() != "context_length" || a[1].Get("status").String() != "skipped" || a[1].Get("reason").String() != "context_length" {
			t.Errorf("%d %s", status, body.Raw)
		}
		if fake.Calls("ok") != 0 {
			t.Errorf("a smaller window was sent the request that was too long")
		}
	})
	t.Run("retry honours Retry-After and the same model answers the retry line", func(t *testing.T) {
		before := fake.Calls("error-429-retry-after")
		start := time.Now()
		status, body := post(`{"models":["fake/error-429-retry-after","fake/ok"],"redundancy":{"retry":{"attempts":1,"max_wait_ms":5000}},` + msgs + `}`)
		a := body.Get("secureai.failover.attempts").Array()
		if status != 200 || len(a) != 3 || a[1].Get("retry").Int() != 1 || a[1].Get("model").String() != "fake/error-429-retry-after" {
			t.Fatalf("%d %s", status, body.Raw)
		}
		if fake.Calls("error-429-retry-after")-before != 2 || time.Since(start) < time.Second {
			t.Errorf("the rate-limited model was asked %d times within %v; want twice, after its Retry-After", fake.Calls("error-429-retry-after")-before, time.Since(start))
		}
	})
}
