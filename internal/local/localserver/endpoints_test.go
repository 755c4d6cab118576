package localserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/endpoint/models"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/provider/adapters"
)

type anyKey struct{}

func (anyKey) KeyByHash(context.Context, string) (*apikey.Key, error) {
	return &apikey.Key{ID: "k"}, nil
}

// The models function builds no provider, yet lists exactly what the full gateway lists: the
// models whose provider has its credential.
func TestModelsAloneListsWhatTheGatewayLists(t *testing.T) {
	cat := &catalog.Catalog{
		Providers: map[string]catalog.ProviderConfig{
			"keyed":   {Type: "openai", APIKeyEnv: "KEYED_API_KEY"},
			"missing": {Type: "anthropic", APIKeyEnv: "MISSING_API_KEY"},
			"open":    {Type: "openai", BaseURL: "http://127.0.0.1:1/v1"},
			"bedrock": {Type: "bedrock", Region: "us-east-1"},
		},
		Models: map[string]*catalog.Model{
			"keyed/a": {Provider: "keyed", Upstream: "a"}, "missing/b": {Provider: "missing", Upstream: "b"},
			"open/c": {Provider: "open", Upstream: "c"}, "bedrock/d": {Provider: "bedrock", Upstream: "d"},
		},
	}
	for n, m := range cat.Models {
		m.Name = n
	}
	// Bedrock is listed only where an AWS credential source is visible; here none is (no keys in
	// the lookup, an empty home): issue 12.6 — decided without probing the metadata service.
	t.Setenv("HOME", t.TempDir())
	d := gateway.Deps{Catalog: cat, Providers: adapters.Factories(), Keys: anyKey{}, Credential: func(name string) string {
		if name == "KEYED_API_KEY" {
			return "sk-test"
		}
		return ""
	}}
	gw, err := NewGateway(d)
	if err != nil {
		t.Fatal(err)
	}
	list := func(h http.Handler) string {
		r := httptest.NewRequest("GET", "/v1/models", nil)
		r.Header.Set("Authorization", "Bearer "+apikey.NewSecret())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	h, err := models.New(d)
	if err != nil {
		t.Fatal(err)
	}
	alone, all := list(h), list(gw.Mux())
	if alone != all {
		t.Errorf("models.New lists %s\nthe gateway lists %s", alone, all)
	}
	want := `{"data":[{"id":"keyed/a","object":"model","created":0,"owned_by":"keyed"},{"id":"open/c","object":"model","created":0,"owned_by":"open"}],"object":"list"}`
	if alone != want+"\n" {
		t.Errorf("models.New lists %s, want %s", alone, want)
	}
}
