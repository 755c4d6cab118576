package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/openaifake"
	"github.com/secureai-gateway/gateway/internal/openapitest"
	"github.com/secureai-gateway/gateway/internal/provider/adapters"
	"github.com/tidwall/gjson"
)

// The opt-in extensions through the OpenAI surface, against the fault-injecting fake provider.
func TestFailoverExtensionsThroughTheGateway(t *testing.T) {
	fake := openaifake.New(300 * time.Millisecond)
	up := httptest.NewServer(fake)
	defer up.Close()
	windows := map[string]int{"context-length": 8000, "ok": 4000, "tools": 100000, "error-429-retry-after": 8000}
	cat := &catalog.Catalog{Providers: map[string]catalog.ProviderConfig{"fake": {Type: "openai", BaseURL: up.URL + "/v1"}}, Models: map[string]*catalog.Model{}}
	for _, m := range openaifake.Models {
		cat.Models["fake/"+m] = &catalog.Model{Name: "fake/" + m, Provider: "fake", Upstream: m, ContextWindow: windows[m]}
	}
	gw, err := gateway.New(gateway.Deps{Catalog: cat, Providers: adapters.Factories(), Credential: func(string) string { return "" }, Keys: oneKey{},
		Budget: 30 * time.Second, MaxBody: 1 << 20, Engine: chain.Engine{Reserve: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(openapitest.Handler(t, gw.Mux()))
	defer srv.Close()
	post := func(body string) (int, gjson.Result) {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+apikey.NewSecret())
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, gjson.ParseBytes(b)
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
