package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/chain"
)

func TestBuiltinIsValid(t *testing.T) {
	c := Builtin()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	m := c.Models["openai/gpt-5-nano"]
	if m == nil || m.Name != "openai/gpt-5-nano" || m.Provider != "openai" || m.Upstream == "" {
		t.Fatalf("openai/gpt-5-nano: %+v", m)
	}
}

// Issue 34.3: requests' model names are bounded (chain.ValidModelName); every built-in name is
// within the bound, and so is each upstream id sent through a provider with any_model.
func TestEveryBuiltinModelCanBeNamedByARequest(t *testing.T) {
	c := Builtin()
	for _, name := range c.ModelNames() {
		m := c.Models[name]
		if !chain.ValidModelName(name) {
			t.Errorf("%s is refused as a model name", name)
		}
		for _, d := range append([]*Model{m}, m.Deployed()...) {
			if d.Upstream == "" {
				continue // a model with deployments: each of them has its upstream id
			}
			if viaAny := d.Provider + "/" + d.Upstream; !chain.ValidModelName(viaAny) {
				t.Errorf("%s is refused as a model name (%s through any_model)", viaAny, name)
			}
		}
	}
}

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	t.Run("no-path-is-builtin", func(t *testing.T) {
		c, err := Load("")
		if err != nil || len(c.Models) != len(Builtin().Models) {
			t.Fatalf("%v, %d models", err, len(c.Models))
		}
	})
	t.Run("aliases-name-chains", func(t *testing.T) {
		c, err := Load(write(t, `{"aliases": {"claude-sonnet-4-5": {"models": ["anthropic/claude-sonnet-4", "openai/gpt-5-nano", "anthropic/claude-sonnet-4"], "first_token_timeout_ms": 99}}}`))
		if err != nil {
			t.Fatal(err)
		}
		a := c.Aliases["claude-sonnet-4-5"]
		if a == nil || len(a.Models) != 2 || a.FirstTokenTimeoutMS != 500 {
			t.Errorf("alias %+v: want two distinct models and the timeout clamped to 500 ms", a)
		}
		for _, bad := range []string{`{"aliases": {"x": {"models": []}}}`, `{"aliases": {"x": null}}`,
			`{"aliases": {"x": {"models": ["a/1", "a/2", "a/3", "a/4"]}}}`, `{"aliases": {"x": {"models": ["a/1"], "on": ["sometimes"]}}}`} {
			if _, err := Load(write(t, bad)); err == nil || !strings.Contains(err.Error(), `alias "x"`) {
				t.Errorf("%s: error %v, want one naming the alias", bad, err)
			}
		}
	})
	t.Run("overlay-adds-and-overrides", func(t *testing.T) {
		c, err := Load(write(t, `{
			"providers": {"groq": {"type": "openai", "base_url": "https://api.groq.com/openai/v1", "api_key_env": "GROQ_API_KEY"},
			              "openai": {"type": "openai", "base_url": "http://localhost:9999/v1"}},
			"models": {"groq/llama": {"upstream": "llama-3.3-70b", "pricing": {"input_per_1m": 0.5, "output_per_1m": 0.8}},
			           "openai/gpt-5-nano": {"upstream": "gpt-5-nano-2026"},
			           "mine/x": {"provider": "groq", "upstream": "x"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		if c.Providers["openai"].BaseURL != "http://localhost:9999/v1" || c.Providers["anthropic"].Type != "anthropic" {
			t.Errorf("providers not merged: %+v", c.Providers)
		}
		if m := c.Models["groq/llama"]; m == nil || m.Provider != "groq" || m.Name != "groq/llama" || m.Pricing.OutputPer1M != 0.8 {
			t.Errorf("groq/llama: %+v", m)
		}
		if m := c.Models["openai/gpt-5-nano"]; m.Upstream != "gpt-5-nano-2026" {
			t.Errorf("override lost: %+v", m)
		}
		if m := c.Models["mine/x"]; m.Provider != "groq" {
			t.Errorf("explicit provider lost: %+v", m)
		}
		if c.Models["openai/gpt-5"] == nil {
			t.Error("built-in models dropped by the overlay")
		}
	})
	errs := []struct{ name, body, want string }{
		{"unknown-top-field", `{"provider": {}}`, "unknown field"},
		{"unknown-model-field", `{"models": {"openai/x": {"upstream": "x", "price": 1}}}`, "unknown field"},
		{"not-json", `{"models":`, "config.json"},
		{"model-without-definition", `{"models": {"openai/x": null}}`, `"openai/x" has no definition`},
		{"unknown-provider", `{"models": {"nowhere/x": {"upstream": "x"}}}`, `provider "nowhere"`},
		{"no-upstream", `{"models": {"openai/x": {"pricing": {}}}}`, `"openai/x" has no upstream id`},
		{"name-a-request-cannot-send", `{"models": {"openai/gpt 5": {"upstream": "gpt-5"}}}`, `"openai/gpt 5": a request cannot name it`},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(write(t, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
	t.Run("missing-file", func(t *testing.T) {
		if _, err := Load(filepath.Join(t.TempDir(), "nope.json")); err == nil || !strings.Contains(err.Error(), "SECUREAI_CONFIG") {
			t.Fatalf("error %v, want it to name SECUREAI_CONFIG", err)
		}
	})
}

func TestBuiltinNotSharedBetweenLoads(t *testing.T) {
	a := Builtin()
	a.Models["openai/gpt-5-nano"].Upstream = "changed"
	delete(a.Models, "openai/gpt-5")
	b := Builtin()
	if b.Models["openai/gpt-5-nano"].Upstream == "changed" || b.Models["openai/gpt-5"] == nil {
		t.Error("Builtin returns shared state")
	}
}
