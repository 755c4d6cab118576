package catalog

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/provider"
)

// Factory builds a provider of one wire type.
type Factory func(provider.Config) (provider.Provider, error)

// Route is where a model's attempts go.
type Route struct {
	Model    *Model
	Provider provider.Provider
	// Entitled says the provider opted in to receive each attempt's entitlement token.
	Entitled bool
	// Wire is the provider's wire format ("openai", "anthropic", "gemini", "bedrock").
	Wire string
	// Deployments are, for a model served by several deployments, the route of each one whose
	// provider can be called, in catalog order; Model is then the catalog entry and Provider is
	// nil: an attempt goes to one of them.
	Deployments []Route
}

// ModelError says why a model cannot be used: unknown to the catalog, or its provider lacks a
// credential. It is raised before any attempt, for every model of a chain.
type ModelError struct {
	Model       string
	Unavailable bool
	Detail      string
}

func (e *ModelError) Error() string {
	if e.Unavailable {
		return fmt.Sprintf("model %s is unavailable: %s", e.Model, e.Detail)
	}
	return fmt.Sprintf("model %s is not in the catalog", e.Model)
}

// Fault implements fault.Describer: an unknown model is the caller's 400, a model whose provider
// cannot be called is a 503.
func (e *ModelError) Fault() *fault.Error {
	if e.Unavailable {
		return fault.New(fault.ModelUnavailable, "Model unavailable", e.Error()).WithCode("model_unavailable").WithParam("model")
	}
	return fault.New(fault.InvalidRequest, "Unknown model", e.Error()).WithCode("model_not_found").WithParam("model")
}

// Listing says which models are available from the credentials alone, building no provider: for
// an endpoint that lists models and calls none. A Router answers the same for the models it routes.
type Listing struct {
	cat         *Catalog
	unavailable map[string]string // provider name → why
}

// NewListing notes every provider whose credential is missing. credential resolves an
// api_key_env name, as for NewRouter.
func NewListing(c *Catalog, credential func(name string) string) *Listing {
	l := &Listing{cat: c, unavailable: map[string]string{}}
	for _, m := range c.Models {
		m.deploy()
	}
	for name, pc := range c.Providers {
		switch {
		case pc.APIKeyEnv != "" && credential(pc.APIKeyEnv) == "":
			l.unavailable[name] = fmt.Sprintf("provider %s has no credential configured (%s is not set)", name, pc.APIKeyEnv)
		case pc.Type == "bedrock" && !awsCredentials(credential):
			l.unavailable[name] = fmt.Sprintf("provider %s has no AWS credentials (set AWS_PROFILE or AWS_ACCESS_KEY_ID, or run where a role provides them)", name)
		}
	}
	return l
}

// awsCredentials reports whether an AWS credential source is visible without asking the network:
// keys or a profile in the environment, a shared credentials or config file, a web identity
// token, a container credentials endpoint, or a Lambda function (whose role's keys are in its
// environment). The SDK's last resort, the EC2 instance metadata service, is not probed: on a
// laptop that would stall the first call for seconds before failing.
func awsCredentials(getenv func(string) string) bool {
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_LAMBDA_FUNCTION_NAME"} {
		if getenv(v) != "" {
			return true
		}
	}
	files := []string{getenv("AWS_SHARED_CREDENTIALS_FILE"), getenv("AWS_CONFIG_FILE")}
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".aws", "credentials"), filepath.Join(home, ".aws", "config"))
	}
	for _, f := range files {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}

// Available lists the models whose provider is configured and has its credential, in name order.
func (l *Listing) Available() []*Model {
	out := make([]*Model, 0, len(l.cat.Models))
	for _, n := range l.cat.ModelNames() {
		if m := l.cat.Models[n]; l.ready(m) {
			out = append(out, m)
		}
	}
	return out
}

// ready reports whether m can serve now: its provider, or one of its deployments' providers, is
// configured and has its credential.
func (l *Listing) ready(m *Model) bool {
	if len(m.views) > 0 {
		return slices.ContainsFunc(m.views, l.ready)
	}
	_, configured := l.cat.Providers[m.Provider]
	return configured && l.unavailable[m.Provider] == ""
}

// Lookup finds a model that can serve now: a catalog entry, or a name that an any_model provider
// admits, whose provider has its credential.
func (l *Listing) Lookup(name string) (*Model, bool) {
	m, ok := l.cat.Models[name]
	if !ok {
		m = l.cat.anyModel(name)
	}
	if m == nil {
		return nil, false
	}
	return m, l.ready(m)
}

// Router maps model names to ready providers. Providers are built once, at start.
type Router struct {
	*Listing
	providers map[string]provider.Provider
	deployed  map[string][]Route // a model with deployments → the routes of those that can serve
}

// NewRouter builds one provider per configured provider. credential resolves an api_key_env name
// (from the environment locally, from Secrets Manager in the cloud). A provider whose credential
// is missing stays listed as unavailable rather than failing the start.
func NewRouter(c *Catalog, factories map[string]Factory, credential func(name string) string, client *http.Client) (*Router, error) {
	r := &Router{Listing: NewListing(c, credential), providers: map[string]provider.Provider{}, deployed: map[string][]Route{}}
	for name, pc := range c.Providers {
		f, ok := factories[pc.Type]
		if !ok {
			return nil, fmt.Errorf("catalog: provider %q has unknown type %q", name, pc.Type)
		}
		if r.unavailable[name] != "" {
			continue
		}
		cfg := provider.Config{Name: name, Type: pc.Type, BaseURL: pc.BaseURL, Region: pc.Region, Client: client, Responses: pc.Responses}
		if pc.APIKeyEnv != "" {
			cfg.APIKey = credential(pc.APIKeyEnv)
		}
		p, err := f(cfg)
		if err != nil {
			return nil, fmt.Errorf("catalog: provider %q: %w", name, err)
		}
		r.providers[name] = p
	}
	for name, m := range c.Models {
		for _, v := range m.views {
			if route, ok := r.route(v); ok {
				r.deployed[name] = append(r.deployed[name], route)
			}
		}
	}
	return r, nil
}

// route is where attempts of m (a model, or one deployment's view of it) go, if its provider can
// be called.
func (r *Router) route(m *Model) (Route, bool) {
	p, ok := r.providers[m.Provider]
	if !ok {
		return Route{}, false
	}
	pc := r.cat.Providers[m.Provider]
	return Route{Model: m, Provider: p, Entitled: pc.ReceiveEntitlement, Wire: pc.Type}, true
}

// Route returns where model's attempts go.
func (r *Router) Route(model string) (Route, error) {
	m, ok := r.cat.Models[model]
	if !ok {
		if m = r.cat.anyModel(model); m == nil {
			return Route{}, &ModelError{Model: model}
		}
	}
	if len(m.views) > 0 {
		routes := r.deployed[model]
		if len(routes) == 0 {
			return Route{}, &ModelError{Model: model, Unavailable: true, Detail: "none of its deployments' providers can be called: " + r.unavailableOf(m.views)}
		}
		return Route{Model: m, Deployments: routes}, nil
	}
	route, ok := r.route(m)
	if !ok {
		return Route{}, &ModelError{Model: model, Unavailable: true, Detail: r.unavailable[m.Provider]}
	}
	return route, nil
}

// unavailableOf says why each deployment's provider cannot be called.
func (r *Router) unavailableOf(views []*Model) string {
	why := make([]string, 0, len(views))
	for _, v := range views {
		w := r.unavailable[v.Provider]
		if w == "" {
			w = fmt.Sprintf("provider %s is not configured", v.Provider)
		}
		why = append(why, w)
	}
	return strings.Join(why, "; ")
}
