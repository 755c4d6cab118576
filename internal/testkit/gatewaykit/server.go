// Package gatewaykit is the one kit the tests use to run the whole gateway in process: the local
// server (`make run`'s gateway: localserver.Deps on an embedded store in a test's temporary folder)
// behind an httptest server, in front of fake providers that record what reaches them, with a
// client that creates keys through the admin API and returns parsed answers. Every exchange is
// validated against docs/openapi.yaml unless the caller opts out (a benchmark must: validation costs
// ~100× a request).
package gatewaykit

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/local/localserver"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
	"github.com/secureai-gateway/gateway/internal/testkit/openapitest"
)

// Env is the environment the tests run the gateway with: a 30 s request budget, 1 MiB bodies,
// request counts written every 200 ms (so a test sees its requests over time without waiting a
// minute).
func Env() localserver.Env {
	return localserver.Env{RequestTimeout: 30 * time.Second, MaxBody: 1 << 20, StatsFlush: 200 * time.Millisecond}
}

// Server is a running local gateway.
type Server struct {
	URL   string
	Admin string // the bootstrap admin key's secret
	// Store is the embedded store; a test may close it to see the gateway with its store down.
	Store *boltstore.Store
	// Routes are the routes the gateway serves (Gateway.Routes).
	Routes []string
	// Upstream records what reached the fake providers Fakes started (nil when the catalog came
	// from elsewhere).
	Upstream *Upstream
	// Stop stops the server and its background work (pending events handed on, the tracer
	// shut down) and closes the store; t's cleanup calls it too, once in all.
	Stop func()
}

// Option changes how Serve starts the gateway.
type Option func(*options)

type options struct {
	validate bool
	upstream *Upstream
}

func apply(opts []Option) options {
	o := options{validate: true}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// wrap is h validated against the OpenAPI document, unless Unvalidated was given.
func (o options) wrap(t testing.TB, h http.Handler) http.Handler {
	if !o.validate {
		return h
	}
	return openapitest.Handler(t, h)
}

// Unvalidated serves the gateway's mux as is: for a benchmark, or a test whose traffic the
// document does not describe (a browser loading the console's pages).
func Unvalidated() Option { return func(o *options) { o.validate = false } }

// WithUpstream names the recorder of the catalog's fake providers, for Server.Upstream.
func WithUpstream(u *Upstream) Option { return func(o *options) { o.upstream = u } }

// Serve starts the gateway over cat with env, every exchange validated against the OpenAPI
// document unless Unvalidated is given.
func Serve(t testing.TB, cat *catalog.Catalog, env localserver.Env, opts ...Option) *Server {
	t.Helper()
	return ServeAt(t, filepath.Join(t.TempDir(), "gateway.db"), cat, env, opts...)
}

// ServeAt is Serve on the store file at path, which may hold records already: its admin key is
// env.BootstrapKey when set (made sure to exist, as make run does), else a new one when the
// store holds no key.
func ServeAt(t testing.TB, path string, cat *catalog.Catalog, env localserver.Env, opts ...Option) *Server {
	t.Helper()
	o := apply(opts)
	store, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	deps, wait, err := localserver.Deps(ctx, env, cat, store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		cancel()
		store.Close()
		t.Fatal(err)
	}
	stop := func() {
		cancel()
		wait()
		store.Close()
	}
	secret, err := localserver.Bootstrap(ctx, store, env.BootstrapKey)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	secret = cmp.Or(secret, env.BootstrapKey)
	gw, err := localserver.NewGateway(deps)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	srv := httptest.NewServer(o.wrap(t, gw.Mux()))
	var once sync.Once
	s := &Server{URL: srv.URL, Admin: secret, Store: store, Routes: gw.Routes(), Upstream: o.upstream, Stop: func() {
		once.Do(func() {
			srv.Close()
			stop()
		})
	}}
	t.Cleanup(s.Stop)
	return s
}

// Call sends body to path with key (none when "") and returns the status, headers and parsed body.
func (s *Server) Call(t testing.TB, method, path, key, body string) (int, http.Header, gjson.Result) {
	t.Helper()
	return Call(t, method, s.URL+path, key, body)
}

// Call sends body to url with key (none when "") and returns the status, headers and parsed body:
// Server.Call for a gateway started otherwise (Bare).
func Call(t testing.TB, method, url, key, body string) (int, http.Header, gjson.Result) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, gjson.ParseBytes(b)
}

// NewKey creates a key with fields (the admin API's JSON) and returns its secret.
func (s *Server) NewKey(t testing.TB, fields string) string {
	t.Helper()
	status, _, body := s.Call(t, "POST", "/admin/api-keys", s.Admin, fields)
	if status != http.StatusCreated || body.Get("secret").String() == "" {
		t.Fatalf("creating a key: %d %s", status, body.Raw)
	}
	return body.Get("secret").String()
}

// ChatBody is an OpenAI-surface chat request saying "hi", its models named by chain
// (`"model":"m"`, `"models":[…]` or `"model":"m","fallback_models":[…]`).
func ChatBody(chain string) string {
	return `{` + chain + `,"messages":[{"role":"user","content":"hi"}]}`
}
