package openaiapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/openai"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/tidwall/gjson"
)

// FuzzChatRequest feeds arbitrary bodies through POST /v1/chat/completions in front of a fake
// upstream: the handler never panics and never answers 500 — bad input is a 4xx naming what is
// wrong, a good one is served.
func FuzzChatRequest(f *testing.F) {
	up := httptest.NewServer(openaifake.New(time.Second))
	f.Cleanup(up.Close)
	cat := &catalog.Catalog{
		Providers: map[string]catalog.ProviderConfig{"fake": {Type: "openai", BaseURL: up.URL + "/v1"}},
		Models:    map[string]*catalog.Model{},
	}
	for _, m := range []string{"ok", "tools", "error-500", "error-429", "context-length", "stream-error", "cut"} {
		cat.Models["fake/"+m] = &catalog.Model{Name: "fake/" + m, Provider: "fake", Upstream: m}
	}
	router, err := catalog.NewRouter(cat, map[string]catalog.Factory{"openai": openai.New}, func(string) string { return "" }, provider.NewHTTPClient())
	if err != nil {
		f.Fatal(err)
	}
	h := &openaiapi.Handler{
		Completions: &completion.Service{Router: router, Engine: chain.Engine{Reserve: 50 * time.Millisecond}, Settings: chain.ProjectSettings},
		Models:      router, MaxBody: 64 << 10,
	}
	key := &apikey.Key{ID: "k", FailoverDefaults: &chain.Defaults{Models: []string{"fake/error-500", "fake/ok"}}}

	for _, s := range []string{
		`{"model":"fake/ok","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"fake/ok","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"models":["fake/error-500",{"model":"fake/ok","timeout_ms":2000}],"messages":[{"role":"user","content":"hi"}],"stream":true}`,
		`{"model":"fake/error-429","fallback_models":["fake/tools"],"redundancy":{"on":["rate_limit"],"timeout_ms":1000},"messages":[{}]}`,
		`{"model":"fake/error-500","messages":[1]}`,
		`{"model":"fake/context-length","messages":[1],"stream":true}`,
		`{"model":"fake/stream-error","messages":[1],"stream":true}`,
		`{"models":[],"messages":[1]}`,
		`{"models":[{"model":""}],"messages":[1]}`,
		`{"model":"nope","messages":[1]}`,
		`{"model":1,"messages":"x","stream":"y"}`,
		`{"model":"fake/ok","messages":[1],"redundancy":{"timeout_ms":1e400}}`,
		`{"model":"fake/ok","messages":[1],"redundancy":{"timeout_ms":-0.5,"first_token_timeout_ms":"1"}}`,
		`{"model":"fake/ok","model":"fake/tools","messages":[1]}`,
		`{"model":"fake/ok","messages":[1],"models":null,"fallback_models":null,"redundancy":null}`,
		`{"model":"fake/ok\u0000","messages":[1]}`,
		`[]`, `null`, ``, `{`, `{"a":}`, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx, cancel := context.WithTimeout(identity.WithKey(context.Background(), key), 3*time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/chat/completions", strings.NewReader(string(body)))
		rec := httptest.NewRecorder()
		h.Chat(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusBadGateway && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		if rec.Code >= 400 {
			e := gjson.Get(rec.Body.String(), "error")
			if e.Get("message").String() == "" || e.Get("type").String() == "" {
				t.Fatalf("status %d without an OpenAI error envelope: %s", rec.Code, rec.Body)
			}
		}
		if rec.Code == http.StatusBadGateway && gjson.Get(rec.Body.String(), "error.code").String() != "all_models_failed" {
			t.Fatalf("502 that is not an exhausted chain: %s", rec.Body)
		}
	})
}
