// Package localserver assembles the local server, `make run`: every feature of the gateway on the
// embedded store (internal/store/boltstore) and the in-process event pipeline (internal/local/localevents).
// Only cmd/gateway and tests import it, so no Lambda function links the embedded store.
package localserver

import (
	"cmp"
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/entitlement"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/local/localevents"
	"github.com/secureai-gateway/gateway/internal/metrics"
	"github.com/secureai-gateway/gateway/internal/provider/adapters"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/reqstats"
	"github.com/secureai-gateway/gateway/internal/sharedhealth"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
	"github.com/secureai-gateway/gateway/internal/store/keycache"
	"github.com/secureai-gateway/gateway/internal/tracing"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// Deps assembles every feature on the embedded store: keys behind an in-process cache that an
// admin change invalidates at once, exact in-memory limit counters persisted every few seconds,
// billing, circuit breakers, the signing keyset, receipts, the in-process event pipeline that
// delivers webhooks and writes the audit log, request counts over time flushed every minute, and
// provider health kept in the store as the cloud keeps it in DynamoDB. wait stops the background
// work and returns once it has (the last counts saved, pending events and health reports handed on).
func Deps(ctx context.Context, env Env, cat *catalog.Catalog, store *boltstore.Store, log *slog.Logger) (d gateway.Deps, wait func(), err error) {
	reach, err := webhook.ParseReach(os.Getenv(webhook.EnvAllowPrivate), webhook.ReachLoopback)
	if err != nil {
		return d, nil, err
	}
	if reach != webhook.ReachPublic {
		log.Info("webhooks may target " + reach.String() + " addresses besides public ones, never link-local (" +
			webhook.EnvAllowPrivate + "=public|loopback|private; loopback is the local default)")
	}
	events := localevents.New(store, reach, log)
	// Metrics: the completion observer and its hooks, served at GET /metrics.
	m := metrics.NewPrometheus(func(model string) string {
		if c, ok := cat.Models[model]; ok && c.Provider != "" {
			return c.Provider
		}
		return metrics.ProviderOf(model)
	})
	events.Publisher.Unpublished, events.Dispatcher.Observe = m.EventsUnpublished, m.WebhookDelivery
	breakerCfg, err := breaker.ConfigFromEnv(os.Getenv)
	if err != nil {
		return d, nil, err
	}
	keyset, err := signing.Ensure(ctx, store, time.Now())
	if err != nil {
		return d, nil, err
	}
	signer, err := signing.NewSigner(keyset, entitlement.Type, receipt.Type)
	if err != nil {
		return d, nil, err
	}
	// Receipts are kept as their claims and signed when read: the store holds the key anyway.
	store.SignReceiptsWhenRead(signer)
	counts := limits.NewMemory()
	if err := counts.Restore(ctx, store, time.Now()); err != nil {
		return d, nil, err
	}
	keys := keycache.New(store, keycache.DefaultTTL, time.Now)
	// Completed chat requests, counted in memory and written every StatsFlush (and at shutdown).
	requests := reqstats.NewCounter(env.StatsFlush, time.Now)
	// Provider health goes through the embedded store as it goes through DynamoDB in the cloud:
	// every request of this process shares one Health, and its reports outlive a restart.
	health := chain.NewHealth(time.Now)
	shared := sharedhealth.New(store, sharedhealth.Options{Log: log})
	health.Shared = shared
	d = gateway.Deps{
		Catalog: cat, Providers: adapters.Factories(), Credential: os.Getenv, Keys: keys, Log: log,
		Budget: env.RequestTimeout, MaxBody: env.MaxBody, Engine: chain.Engine{Reserve: 100 * time.Millisecond, Health: health},
		Idempotency:    store,
		Signer:         signer,
		KeyCacheTTL:    0, // the local server's cache is invalidated at once
		SkipUnhealthy:  env.SkipUnhealthy,
		ReadBudget:     &httpapi.KeyBudget{PerMinute: cmp.Or(env.ReadBudget, httpapi.DefaultReadBudget)},
		Metrics:        m.Handler(),
		Events:         events.Publisher,
		TrustedProxies: env.TrustedProxies,
	}
	if env.Port != "" {
		d.LocalURL = "http://127.0.0.1:" + env.Port // the address make run listens on
	}
	err = d.Attach(gateway.Stores{Keys: store, Users: store, Counter: counts,
		Books: ledger.Local{Counter: counts, Users: store, Receipts: store}, HoldMargin: env.HoldMargin,
		Receipts: store, Breakers: store, BreakerConfig: breakerCfg,
		Webhooks: store, AuditLog: events.Audit, Dispatcher: events.Dispatcher, Guard: events.Guard,
		Events: events.Publisher, Metrics: m, Invalidate: keys.Invalidate, Requests: requests, RequestStats: store})
	if err != nil {
		return d, nil, err
	}
	books := d.Ledger
	tracer, err := tracing.New(ctx, env.Tracing)
	if err != nil {
		return d, nil, err
	}

	var bg sync.WaitGroup
	bgCtx, stop := context.WithCancel(ctx)
	bg.Go(func() { counts.PersistEvery(bgCtx, store, limits.DefaultPersistInterval, time.Now, log) })
	bg.Go(func() { requests.FlushEvery(bgCtx, store, log) })
	// Reservations a crash left held are refunded once their deadline has passed: at start, then
	// every minute, in the background.
	bg.Go(func() { books.RefundExpiredEvery(bgCtx, ledger.RefundEvery, log) })
	bg.Go(func() { events.Run(bgCtx) })
	wait = func() {
		stop()
		bg.Wait()
		flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = events.Publisher.Flush(flush)
		_ = shared.Flush(flush)
		if tracer != nil {
			_ = tracer.Shutdown(flush)
		}
	}

	d.Tracer = tracer
	return d, wait, nil
}
