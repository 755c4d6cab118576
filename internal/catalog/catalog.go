// Package catalog is the model catalog: which providers exist, how to reach them, and which models
// each serves with their upstream id, regions, prices and context window. A built-in catalog ships
// with the gateway; the file named by SECUREAI_CONFIG adds to it or overrides it by name.
package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/secureai-gateway/gateway/internal/chain"
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
	// Responses says an "openai" provider also serves the Responses API at base_url/responses
	// (OpenAI does; most OpenAI-compatible servers do not): a /v1/responses request to one of its
	// models is passed through instead of translated to Chat Completions.
	Responses bool `json:"responses,omitempty"`
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
	// Deployments, when set, are the places the model is served (SPEC 3.5a): an attempt of the
	// model goes to one of them, and Provider, Upstream and Regions stay unset.
	Deployments []Deployment `json:"deployments,omitempty"`

	views    []*Model // one per deployment, in catalog order (Deployed)
	deployed bool     // this entry is one deployment's view of its model
}

// Deployment is one place a model is served: a configured provider, the model's id there, the
// region it runs in (for residency), an optional weight and an optional price.
type Deployment struct {
	Provider string `json:"provider"`
	Upstream string `json:"upstream"`
	Region   string `json:"region,omitempty"`
	// Weight, set on every deployment of a model or on none, spreads the model's requests over
	// its deployments in proportion; unset, they are tried in catalog order.
	Weight int `json:"weight,omitempty"`
	// Pricing is the deployment's own price; nil: the model's.
	Pricing *Pricing `json:"pricing,omitempty"`
}

// Deployed returns one entry per deployment, in catalog order, each the model as that deployment
// serves it — its provider, upstream id, region and price — so residency, billing and tokens
// judge the deployment an attempt goes to; nil for a model without deployments.
func (m *Model) Deployed() []*Model { return m.views }

// Deployment names the provider of the deployment this entry is a view of (Deployed); "" for a
// catalog entry itself.
func (m *Model) Deployment() string {
	if m.deployed {
		return m.Provider
	}
	return ""
}

// Weighted reports whether the model's deployments carry weights.
func (m *Model) Weighted() bool { return len(m.Deployments) > 0 && m.Deployments[0].Weight > 0 }

// Weight is the weight of m's deployment on provider; 0 when it has none.
func (m *Model) Weight(provider string) int {
	for _, d := range m.Deployments {
		if d.Provider == provider {
			return d.Weight
		}
	}
	return 0
}

// deploy makes the deployments' views: when the catalog is parsed, or for an entry built in code
// (the demo's), when a Listing is first made over it.
func (m *Model) deploy() {
	if len(m.views) == len(m.Deployments) {
		return
	}
	m.views = nil
	for _, d := range m.Deployments {
		v := *m
		v.Provider, v.Upstream, v.Regions, v.Deployments, v.views, v.deployed = d.Provider, d.Upstream, nil, nil, nil, true
		if d.Region != "" {
			v.Regions = []string{d.Region}
		}
		if d.Pricing != nil {
			v.Pricing = *d.Pricing
		}
		m.views = append(m.views, &v)
	}
}

// Catalog is the merged configuration.
type Catalog struct {
	Providers map[string]ProviderConfig `json:"providers"`
	Models    map[string]*Model         `json:"models"`
	// SMLTPPolicies adds SMLTP policies to the built-in ones or replaces them by name (package
	// policy parses them).
	SMLTPPolicies json.RawMessage `json:"smltp_policies,omitempty"`
	// Aliases map a model name a client sends to the chain it stands for (SPEC 12): coding agents
	// send a model id of their own (claude-sonnet-4-5, gpt-5-codex) and cannot add body members,
	// so the operator names the chain and its options here. Client ids change with client
	// versions, which is why this is configuration and not code.
	Aliases map[string]*chain.Defaults `json:"aliases,omitempty"`
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

// Merge adds o's providers, models and aliases to c, replacing those with the same name.
func (c *Catalog) Merge(o *Catalog) {
	for n, p := range o.Providers {
		c.Providers[n] = p
	}
	for n, a := range o.Aliases {
		if c.Aliases == nil {
			c.Aliases = map[string]*chain.Defaults{}
		}
		c.Aliases[n] = a
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
	for name, a := range c.Aliases {
		if a == nil || len(a.Models) == 0 {
			return nil, fmt.Errorf("catalog: %s: alias %q names no models", source, name)
		}
		n, err := chain.NormalizeDefaults(*a)
		if err != nil {
			return nil, fmt.Errorf("catalog: %s: alias %q: %w", source, name, err)
		}
		c.Aliases[name] = &n
	}
	for name, m := range c.Models {
		if m == nil {
			return nil, fmt.Errorf("catalog: %s: model %q has no definition", source, name)
		}
		m.Name = name
		if len(m.Deployments) > 0 {
			if err := m.checkDeployments(); err != nil {
				return nil, fmt.Errorf("catalog: %s: %w", source, err)
			}
			m.deploy()
			continue
		}
		if m.Provider == "" {
			m.Provider, _, _ = strings.Cut(name, "/")
		}
	}
	return &c, nil
}

// checkDeployments refuses deployments a chain could not tell apart or order: each names a
// provider and an upstream id, no provider twice (the report names an attempt's deployment by its
// provider), weights on all of them or on none, and no model-level provider, upstream or regions
// beside them.
func (m *Model) checkDeployments() error {
	if m.Provider != "" || m.Upstream != "" || len(m.Regions) > 0 {
		return fmt.Errorf("model %q: with deployments, provider, upstream and regions belong to each deployment, not to the model", m.Name)
	}
	weighted := m.Deployments[0].Weight > 0
	for i, d := range m.Deployments {
		switch {
		case d.Provider == "" || d.Upstream == "":
			return fmt.Errorf("model %q: deployments[%d] needs a provider and an upstream id", m.Name, i)
		case d.Weight < 0 || (d.Weight > 0) != weighted:
			return fmt.Errorf("model %q: deployments[%d]: weight must be a positive number, set on every deployment or on none", m.Name, i)
		case slices.ContainsFunc(m.Deployments[:i], func(o Deployment) bool { return o.Provider == d.Provider }):
			return fmt.Errorf("model %q: deployments[%d]: provider %q is named twice (one deployment per provider)", m.Name, i, d.Provider)
		}
	}
	return nil
}

// Validate checks that every model (every deployment) names a known provider and has an
// upstream id, and that a request could name it (chain.ValidModelName).
func (c *Catalog) Validate() error {
	for _, name := range c.ModelNames() {
		m := c.Models[name]
		if !chain.ValidModelName(name) {
			return fmt.Errorf("catalog: model %q: a request cannot name it: a model name has at most %d bytes of ASCII letters, digits and / . _ - : @ +", name, chain.MaxModelName)
		}
		for _, d := range m.Deployments {
			if _, ok := c.Providers[d.Provider]; !ok {
				return fmt.Errorf("catalog: model %q has a deployment on provider %q, which is not configured", name, d.Provider)
			}
		}
		if len(m.Deployments) > 0 {
			if err := m.checkDeployments(); err != nil {
				return fmt.Errorf("catalog: %w", err)
			}
			continue
		}
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
