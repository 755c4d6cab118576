package catalog

import (
	"net/http"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/provider"
)

// The overlay of SECUREAI_CONFIG — the one catalog path the local server and every function
// read — takes a model served by several deployments, and refuses deployments it could not use.
func TestLoadDeployments(t *testing.T) {
	c, err := Load(write(t, `{"models": {"anthropic/claude-any": {
		"pricing": {"input_per_1m": 3, "output_per_1m": 15}, "points": 4, "context_window": 200000, "continue_prefix": true,
		"deployments": [
			{"provider": "anthropic", "upstream": "claude-sonnet-4-20250514", "region": "us"},
			{"provider": "bedrock", "upstream": "us.anthropic.claude-sonnet-4-20250514-v1:0", "region": "us-east-1",
			 "pricing": {"input_per_1m": 2.5, "output_per_1m": 12}}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Models["anthropic/claude-any"]
	views := m.Deployed()
	if len(views) != 2 || m.Weighted() || m.Deployment() != "" {
		t.Fatalf("deployed %d views, weighted %v, deployment %q", len(views), m.Weighted(), m.Deployment())
	}
	a, b := views[0], views[1]
	if a.Name != m.Name || a.Provider != "anthropic" || a.Upstream != "claude-sonnet-4-20250514" || a.Regions[0] != "us" ||
		a.Pricing != m.Pricing || a.Points != 4 || a.ContextWindow != 200000 || !a.ContinuePrefix || a.Deployment() != "anthropic" {
		t.Errorf("first deployment's view %+v", a)
	}
	if b.Provider != "bedrock" || b.Regions[0] != "us-east-1" || b.Pricing != (Pricing{InputPer1M: 2.5, OutputPer1M: 12}) {
		t.Errorf("second deployment's view (its own price) %+v", b)
	}

	errs := []struct{ name, model, want string }{
		{"model-level-upstream", `{"upstream": "x", "deployments": [{"provider": "openai", "upstream": "x"}]}`, "belong to each deployment"},
		{"no-upstream", `{"deployments": [{"provider": "openai"}]}`, "deployments[0] needs a provider and an upstream id"},
		{"provider-twice", `{"deployments": [{"provider": "openai", "upstream": "x"}, {"provider": "openai", "upstream": "y"}]}`, `provider "openai" is named twice`},
		{"weights-on-some", `{"deployments": [{"provider": "openai", "upstream": "x", "weight": 2}, {"provider": "google", "upstream": "y"}]}`, "deployments[1]: weight"},
		{"negative-weight", `{"deployments": [{"provider": "openai", "upstream": "x", "weight": -1}]}`, "weight must be a positive number"},
		{"unknown-provider", `{"deployments": [{"provider": "nowhere", "upstream": "x"}]}`, `deployment on provider "nowhere"`},
		{"unknown-field", `{"deployments": [{"provider": "openai", "upstream": "x", "zone": "a"}]}`, "unknown field"},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(write(t, `{"models": {"openai/x": `+tc.model+`}}`))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// A model is listed (once) and routed while any of its deployments can be called; the route
// holds one deployment per callable provider, in catalog order.
func TestRouterDeployments(t *testing.T) {
	c := &Catalog{
		Providers: map[string]ProviderConfig{"a": {Type: "openai"}, "b": {Type: "openai", APIKeyEnv: "B_KEY"}, "c": {Type: "openai"}},
		Models: map[string]*Model{"x/m": {Name: "x/m", Deployments: []Deployment{
			{Provider: "a", Upstream: "m-a", Weight: 1}, {Provider: "b", Upstream: "m-b", Weight: 2}, {Provider: "c", Upstream: "m-c", Weight: 3}}}},
	}
	factory := map[string]Factory{"openai": func(provider.Config) (provider.Provider, error) { return nil, nil }}
	noB := func(string) string { return "" }
	r, err := NewRouter(c, factory, noB, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Available(); len(got) != 1 || got[0].Name != "x/m" {
		t.Errorf("available %v, want x/m once", got)
	}
	route, err := r.Route("x/m")
	if err != nil || len(route.Deployments) != 2 || route.Deployments[0].Model.Upstream != "m-a" || route.Deployments[1].Model.Upstream != "m-c" {
		t.Fatalf("route %+v, %v: want the deployments on a and c (b lacks its credential)", route, err)
	}
	if m := c.Models["x/m"]; !m.Weighted() || m.Weight("c") != 3 || m.Weight("z") != 0 {
		t.Errorf("weights: %v %d", m.Weighted(), m.Weight("c"))
	}

	c.Providers = map[string]ProviderConfig{"b": {Type: "openai", APIKeyEnv: "B_KEY"}}
	r, err = NewRouter(c, factory, noB, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Lookup("x/m"); ok {
		t.Error("a model none of whose deployments can be called is listed as available")
	}
	if _, err := r.Route("x/m"); err == nil || !strings.Contains(err.Error(), "B_KEY is not set") {
		t.Errorf("route error %v, want it to say why each deployment cannot be called", err)
	}
}
