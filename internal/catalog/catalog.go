// Package catalog is the model catalog: which providers exist, how to reach them, and which models
// each serves with their upstream id, regions, prices and context window. A built-in catalog ships
// with the gateway; the file named by SECUREAI_CONFIG adds to it or overrides it by name.
package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// ProviderConfig says how to reach one provider.
type ProviderConfig struct {
	Type      string `json:"type"`                  // openai | anthropic | gemini | bedrock
	BaseURL   string `json:"base_url,omitempty"`    // default: the provider's public endpoint
	APIKeyEnv string `json:"api_key_env,omitempty"` // where the credential comes from; empty: none needed
	Region    string `json:"region,omitempty"`      // default region (Bedrock)
	// AnyModel routes "<provider>/<name>" to upstream model <name> without a catalog entry (an
	// aggregator or a local server with many models); such a model has no price, points or
	// context window.
	AnyModel bool `json:"any_model,omitempty"`
	// ReceiveEntitlement sends each attempt's Signed Entitlement Token to this provider (a
	// self-hosted model server that verifies its callers); no other provider ever receives it.
	ReceiveEntitlement bool `json:"receive_entitlement,omitempty"`
}

// Pricing is USD per one million tokens.
type Pricing struct {
	InputPer1M  float64 `json:"input_per_1m"`
	OutputPer1M float64 `json:"output_per_1m"`
}

// Model is one catalog entry, named "provider/model".
type Model struct {
	Name          string   `json:"-"`
	Provider      string   `json:"provider,omitempty"` // default: the name's prefix before "/"
	Upstream      string   `json:"upstream"`           // the provider's own model id
	Regions       []string `json:"regions,omitempty"`
	Pricing       Pricing  `json:"pricing"`
	Points        int      `json:"points,omitempty"` // points per completion (user-completions billing)
	ContextWindow int      `json:"context_window,omitempty"`
	// ContinuePrefix says the model can continue an assistant prefix (on_interrupt: resume).
	ContinuePrefix bool `json:"continue_prefix,omitempty"`
}

// Catalog is the merged configuration.
type Catalog struct {
	Providers map[string]ProviderConfig `json:"providers"`
	Models    map[string]*Model         `json:"models"`
	// SMLTPPolicies adds SMLTP policies to the built-in ones or replaces them by name (package
	// policy parses them).
	SMLTPPolicies json.RawMessage `json:"smltp_policies,omitempty"`
}

//go:embed models.json
var builtin []byte

// Builtin returns the catalog that ships with the gateway.
func Builtin() *Catalog {
	c, err := parse(builtin, "built-in catalog")
	if err != nil {
		panic(err) // the embedded file is tested; reaching this is a build defect
	}
	return c
}

// Load returns the built-in catalog overlaid with the file at path (none when path is empty).
func Load(path string) (*Catalog, error) {
	c := Builtin()
	if path == "" {
		return c, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("catalog: reading SECUREAI_CONFIG: %w", err)
	}
	over, err := parse(raw, path)
	if err != nil {
		return nil, err
	}
	c.Merge(over)
	return c, c.Validate()
}

// Merge adds o's providers and models to c, replacing those with the same name.
func (c *Catalog) Merge(o *Catalog) {
	for n, p := range o.Providers {
		c.Providers[n] = p
	}
	for n, m := range o.Models {
		c.Models[n] = m
	}
	if o.SMLTPPolicies != nil {
		c.SMLTPPolicies = o.SMLTPPolicies
	}
}

func parse(raw []byte, source string) (*Catalog, error) {
	var c Catalog
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("catalog: %s: %w", source, err)
	}
	if c.Providers == nil {
		c.Providers = map[string]ProviderConfig{}
	}
	if c.Models == nil {
		c.Models = map[string]*Model{}
	}
	for name, m := range c.Models {
		if m == nil {
			return nil, fmt.Errorf("catalog: %s: model %q has no definition", source, name)
		}
		m.Name = name
		if m.Provider == "" {
			m.Provider, _, _ = strings.Cut(name, "/")
		}
	}
	return &c, nil
}

// Validate checks that every model names a known provider and has an upstream id.
func (c *Catalog) Validate() error {
	for _, name := range c.ModelNames() {
		m := c.Models[name]
		if _, ok := c.Providers[m.Provider]; !ok {
			return fmt.Errorf("catalog: model %q names provider %q, which is not configured", name, m.Provider)
		}
		if m.Upstream == "" {
			return fmt.Errorf("catalog: model %q has no upstream id", name)
		}
	}
	return nil
}

// ModelNames lists the models in a stable order.
func (c *Catalog) ModelNames() []string {
	names := make([]string, 0, len(c.Models))
	for n := range c.Models {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// anyModel is the model "<provider>/<name>" of a provider that admits any model name, or nil.
func (c *Catalog) anyModel(name string) *Model {
	prov, upstream, ok := strings.Cut(name, "/")
	if !ok || upstream == "" || !c.Providers[prov].AnyModel {
		return nil
	}
	return &Model{Name: name, Provider: prov, Upstream: upstream}
}
