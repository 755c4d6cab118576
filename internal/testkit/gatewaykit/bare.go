package gatewaykit

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/local/localserver"
	"github.com/secureai-gateway/gateway/internal/provider/adapters"
)

// Deps is the bare gateway's dependencies as the tests set them: every provider adapter, cat's
// providers take no credential, keys finds the callers, a 30 s request budget, 1 MiB bodies and 10 ms kept for the
// answer. A test sets what else it observes (Observer, Idempotency, a Picker) on the result.
func Deps(cat *catalog.Catalog, keys identity.KeyFinder) gateway.Deps {
	return gateway.Deps{Catalog: cat, Providers: adapters.Factories(), Credential: func(string) string { return "" }, Keys: keys,
		Budget: 30 * time.Second, MaxBody: 1 << 20, Engine: chain.Engine{Reserve: 10 * time.Millisecond}}
}

// Bare starts localserver.NewGateway(deps) — the surfaces and the completion with only what deps names, no
// local server around them — on a loopback port closed when t ends, and returns its URL. Every
// exchange is validated against the OpenAPI document unless Unvalidated is given.
func Bare(t testing.TB, deps gateway.Deps, opts ...Option) string {
	t.Helper()
	o := apply(opts)
	gw, err := localserver.NewGateway(deps)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(o.wrap(t, gw.Mux()))
	t.Cleanup(srv.Close)
	return srv.URL
}

// OneFake is a catalog of one provider, "fake", at baseURL (an openaifake server's, with /v1),
// serving each of models as "fake/<model>".
func OneFake(baseURL string, models ...string) *catalog.Catalog {
	cat := &catalog.Catalog{Providers: map[string]catalog.ProviderConfig{"fake": {Type: "openai", BaseURL: baseURL}}, Models: map[string]*catalog.Model{}}
	for _, m := range models {
		cat.Models["fake/"+m] = &catalog.Model{Name: "fake/" + m, Provider: "fake", Upstream: m}
	}
	return cat
}
