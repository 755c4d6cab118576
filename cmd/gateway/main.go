// Command gateway runs SecureAI Gateway on one machine: every route on 127.0.0.1:$PORT, the
// embedded store, and (unless SECUREAI_DEMO=false) the built-in demo provider.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/envvar"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/local/localserver"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("gateway stopped", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	env, err := localserver.LoadEnv()
	if err != nil {
		return err
	}
	limits, err := bodyLimits(envvar.New(os.Getenv))
	if err != nil {
		return err
	}
	cat, stopDemo, err := gateway.Catalog(env.ConfigPath, env.Demo)
	if err != nil {
		return err
	}
	defer stopDemo()
	store, err := boltstore.Open(filepath.Join(env.DataDir, "gateway.db"))
	if err != nil {
		return err
	}
	defer store.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	secret, err := localserver.Bootstrap(ctx, store, env.BootstrapKey)
	if err != nil {
		return err
	}
	deps, wait, err := localserver.Deps(ctx, env, cat, store, log)
	if err != nil {
		return err
	}
	defer wait()
	gw, err := localserver.NewGateway(deps)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", "127.0.0.1:"+env.Port)
	if err != nil {
		return err
	}
	if secret != "" {
		fmt.Fprintf(os.Stderr, "\nCreated an admin API key (shown once, keep it):\n\n    %s\n\n", secret)
	}
	log.Info("SecureAI Gateway listening", "url", "http://"+ln.Addr().String(), "demo", env.Demo, "store", store.Path())
	log.Info("web console (sign in with an admin API key)", "url", "http://"+ln.Addr().String()+"/console/")
	log.Info("Observability: Prometheus metrics at GET /metrics (an admin key's bearer token); Grafana dashboard in docs/grafana/",
		"metrics", "http://"+ln.Addr().String()+"/metrics", "traces", tracesNote(env.Tracing.OTLP))
	srv := newServer(limits.Wrap(gw.Mux()), env.RequestTimeout)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// tracesNote says where traces go, or how to send them somewhere.
func tracesNote(otlp bool) string {
	if otlp {
		return "exported over OTLP/HTTP (OTEL_EXPORTER_OTLP_*)"
	}
	return "off (set OTEL_EXPORTER_OTLP_ENDPOINT to export them)"
}

// Server limits; docs/server-limits.md explains each and the README lists them.
const (
	// readHeaderTimeout bounds the request line and headers.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes a keep-alive connection that sends no new request.
	idleTimeout = 2 * time.Minute
	// maxHeaderBytes bounds the request line and headers together (net/http's default is 1 MB;
	// the gateway's headers are a key, an Idempotency-Key and a few short ones).
	maxHeaderBytes = 64 << 10
	// writeGrace is how much longer than the request budget a response may take to write: the
	// budget ends the work, this ends the writing to a caller that stopped reading.
	writeGrace = 30 * time.Second
)

// bodyLimits reads what request bodies may cost the local server. The body's read time is bounded
// per request by httpapi.BodyLimits, not by http.Server.ReadTimeout, which would cancel a stream's
// context when it fires after the body was read; see docs/server-limits.md.
func bodyLimits(env *envvar.Reader) (httpapi.BodyLimits, error) {
	l := httpapi.BodyLimits{
		ReadTimeout:   env.PositiveDuration("SECUREAI_BODY_READ_TIMEOUT", httpapi.DefaultBodyReadTimeout),
		InflightBytes: env.Positive("SECUREAI_MAX_INFLIGHT_BODY_BYTES", httpapi.DefaultInflightBodyBytes),
		Wait:          httpapi.DefaultBodyWait,
	}
	return l, env.Err()
}

// newServer builds the local HTTP server with the limits a production Go server sets.
func newServer(h http.Handler, budget time.Duration) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		// The write deadline runs from the request's headers, as the budget does.
		WriteTimeout:   budget + writeGrace,
		IdleTimeout:    idleTimeout,
		MaxHeaderBytes: maxHeaderBytes,
	}
}
