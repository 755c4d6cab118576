// Package localservertest starts the local server (`make run`'s gateway: localserver.Deps on an
// embedded store in a test's temporary folder) behind an httptest server, for tests of several
// packages that need the whole gateway in process.
package localservertest

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/boltstore"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/localserver"
)

// Env is the environment the tests run the gateway with: a 30 s request budget, 1 MiB bodies,
// request counts written every 200 ms (so a test sees its requests over time without waiting a
// minute).
func Env() gateway.Env {
	return gateway.Env{RequestTimeout: 30 * time.Second, MaxBody: 1 << 20, StatsFlush: 200 * time.Millisecond}
}

// Server is a running local gateway.
type Server struct {
	URL   string
	Admin string // the bootstrap admin key's secret
	// Store is the embedded store; a test may close it to see the gateway with its store down.
	Store *boltstore.Store
	// Routes are the routes the gateway serves (Gateway.Routes).
	Routes []string
	// Stop stops the server and its background work (pending events handed on, the tracer
	// shut down) and closes the store; t's cleanup calls it too, once in all.
	Stop func()
}

// Serve starts the gateway over cat with env on a new store; wrap (nil: none) wraps its mux, e.g.
// in a validator.
func Serve(t testing.TB, cat *catalog.Catalog, env gateway.Env, wrap func(http.Handler) http.Handler) *Server {
	t.Helper()
	return ServeAt(t, filepath.Join(t.TempDir(), "gateway.db"), cat, env, wrap)
}

// ServeAt is Serve on the store file at path, which may hold records already: its admin key is
// env.BootstrapKey when set (made sure to exist, as make run does), else a new one when the
// store holds no key.
func ServeAt(t testing.TB, path string, cat *catalog.Catalog, env gateway.Env, wrap func(http.Handler) http.Handler) *Server {
	t.Helper()
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
	secret, err := gateway.Bootstrap(ctx, store, env.BootstrapKey)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	secret = cmp.Or(secret, env.BootstrapKey)
	gw, err := gateway.New(deps)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	var h http.Handler = gw.Mux()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	var once sync.Once
	s := &Server{URL: srv.URL, Admin: secret, Store: store, Routes: gw.Routes(), Stop: func() {
		once.Do(func() {
			srv.Close()
			stop()
		})
	}}
	t.Cleanup(s.Stop)
	return s
}
