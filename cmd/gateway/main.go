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

	"github.com/secureai-gateway/gateway/internal/boltstore"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("gateway stopped", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	env, err := gateway.LoadEnv()
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
	secret, err := gateway.Bootstrap(ctx, store, env.BootstrapKey)
	if err != nil {
		return err
	}
	deps, wait, err := gateway.Local(ctx, env, cat, store, log)
	if err != nil {
		return err
	}
	defer wait()
	gw, err := gateway.New(deps)
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
	srv := &http.Server{Handler: gw.Mux(), ReadHeaderTimeout: 10 * time.Second}
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
