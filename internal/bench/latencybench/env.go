package latencybench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/local/localserver"
	"github.com/secureai-gateway/gateway/internal/provider/adapters"
)

// Env is a running fake upstream and a gateway in front of it, both on loopback HTTP in this
// process, built exactly as the local server builds them (localserver.NewGateway, the shared pooled client).
type Env struct {
	UpstreamURL string // http://127.0.0.1:port/v1/chat/completions
	GatewayURL  string // http://127.0.0.1:port/v1/chat/completions
	Secret      string // an API key the gateway accepts
	servers     []*http.Server
}

// Model is the catalog name of the benchmark model; its upstream id is UpstreamModel. FailModel
// is a model of the same provider that the upstream always answers 500 (FailUpstreamModel).
const (
	Model             = "bench/small"
	UpstreamModel     = "fake-small"
	FailModel         = "bench/fail"
	FailUpstreamModel = "fake-fail"
)

// benchCatalog is the catalog of the fake upstream at base (http://127.0.0.1:port): provider
// "bench" of type openai serving Model and FailModel. The in-process gateway is given it as is;
// the gateway process reads it as its SECUREAI_CONFIG overlay.
func benchCatalog(base string) *catalog.Catalog {
	return &catalog.Catalog{
		Providers: map[string]catalog.ProviderConfig{"bench": {Type: "openai", BaseURL: base + "/v1"}},
		Models: map[string]*catalog.Model{
			Model:     {Name: Model, Provider: "bench", Upstream: UpstreamModel},
			FailModel: {Name: FailModel, Provider: "bench", Upstream: FailUpstreamModel},
		},
	}
}

type memKeys struct {
	hash string
	key  *apikey.Key
}

func (m memKeys) KeyByHash(_ context.Context, hash string) (*apikey.Key, error) {
	if hash != m.hash {
		return nil, apikey.ErrNotFound
	}
	return m.key, nil
}

// Options choose what the gateway does per request besides the chain.
type Options struct {
	// Limits counts every request against the key's four windows with the local server's exact
	// in-memory counter (limits high enough that the benchmark is never refused).
	Limits bool
}

// startUpstream starts the fake upstream h alone and returns its base URL.
func startUpstream(h http.Handler) (*Env, string, error) {
	e := &Env{}
	up, err := e.serve(h)
	if err != nil {
		return nil, "", err
	}
	e.UpstreamURL = up + "/v1/chat/completions"
	return e, up, nil
}

// Start starts the upstream and the gateway.
func Start(o Options) (*Env, error) { return start(o, Upstream{}, benchCatalog) }

// start starts upstream and a gateway in front of it with the catalog cat makes of the upstream's
// base URL.
func start(o Options, upstream http.Handler, cat func(base string) *catalog.Catalog) (*Env, error) {
	e, up, err := startUpstream(upstream)
	if err != nil {
		return nil, err
	}
	if err := e.gateway(o, cat(up)); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Env) gateway(o Options, cat *catalog.Catalog) error {
	if err := cat.Validate(); err != nil {
		e.Close()
		return err
	}
	e.Secret = apikey.NewSecret()
	hash, _ := apikey.Hash(e.Secret)
	never := apikey.Limit(1 << 40)
	keys := memKeys{hash: hash, key: &apikey.Key{ID: "key_bench", Hash: hash, Name: "bench", CreatedAt: time.Now(),
		RateLimit: apikey.RateLimit{RequestsPerMinute: never, RequestsPerHour: never}, DailyLimit: never, MonthlyLimit: never}}
	var counted *ledger.Ledger
	if o.Limits {
		counted = &ledger.Ledger{Store: ledger.Local{Counter: limits.NewMemory()}, Limits: true}
	}
	gw, err := localserver.NewGateway(gateway.Deps{
		Ledger:     counted,
		Catalog:    cat,
		Providers:  adapters.Factories(),
		Credential: func(string) string { return "" },
		Keys:       keys,
		Log:        slog.New(slog.DiscardHandler),
		Budget:     5 * time.Minute,
		MaxBody:    8 << 20,
		Engine:     chain.Engine{Reserve: 100 * time.Millisecond},
	})
	if err != nil {
		e.Close()
		return err
	}
	g, err := e.serve(gw.Mux())
	if err != nil {
		e.Close()
		return err
	}
	e.GatewayURL = g + "/v1/chat/completions"
	return nil
}

func (e *Env) serve(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("latencybench: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	e.servers = append(e.servers, srv)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return "http://" + ln.Addr().String(), nil
}

// Close stops both servers.
func (e *Env) Close() {
	for _, s := range e.servers {
		_ = s.Close()
	}
}
