package cloud

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/secureai-gateway/gateway/internal/httpapi"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/secureai-gateway/gateway/internal/awssecrets"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/emit"
	"github.com/secureai-gateway/gateway/internal/entitlement"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/metrics"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/internal/sqsqueue"
	"github.com/secureai-gateway/gateway/internal/webhook"
	"github.com/secureai-gateway/gateway/internal/webhookadmin"
	"golang.org/x/sync/errgroup"
)

// GatewayDeps returns the endpoints' dependencies, each feature on when the function's
// environment names what it needs, as the local server has them all on its embedded store:
//
//	SECUREAI_TABLE_LIMITS            request limits (Limits, Ledger), requests over time (RequestCounter, RequestStats)
//	SECUREAI_TABLE_USERS             quotas and spend (Billing, Ledger), key and user admin (KeyAdmin)
//	SECUREAI_TABLE_CIRCUIT_BREAKERS  circuit breakers (Breakers)
//	SECUREAI_TABLE_RECEIPTS          stored receipts (Receipts, Ledger)
//	SECUREAI_SIGNING_SECRET_ARN      entitlement tokens, receipts' signatures, the JWKS (Signer)
//	SECUREAI_TABLE_WEBHOOKS + _AUDIT webhook and audit-log admin (Webhooks)
//	SECUREAI_TABLE_IDEMPOTENCY       Idempotency-Key records
//	SECUREAI_EVENT_BUS               failover, limit, admin and breaker events (Observer, hooks)
//
// The provider credentials and the signing keyset are read now, together, under ctx (the first
// request's build), never at init.
func (c *Cloud) GatewayDeps(ctx context.Context) (gateway.Deps, error) {
	cat, err := c.catalog()
	if err != nil {
		return gateway.Deps{}, err
	}
	credential, signer, err := c.secretsAtOnce(ctx)
	if err != nil {
		return gateway.Deps{}, err
	}
	t := c.Config.Tables
	// No Budget: HTTP bounds every request by the invocation's deadline, and the classic surface's
	// idempotency lease then covers the longest invocation Lambda allows.
	d := gateway.Deps{SkipUnhealthy: c.Config.SkipUnhealthy,
		Catalog: cat, Credential: credential, Keys: c.keys, Log: c.Log, MaxBody: c.Config.MaxBody,
		HTTPClient: c.ProviderClient(), Engine: c.Engine(), Idempotency: c.Idempotency(),
		Observer:    c.observer(),
		Tracer:      c.Tracer,
		KeyCacheTTL: c.Config.KeyCacheTTL, // another warm function may keep a changed key this long
		Signer:      signer,
		ReadBudget:  &httpapi.KeyBudget{PerMinute: cmp.Or(c.Config.ReadBudget, httpapi.DefaultReadBudget)}, // per instance
	}
	if c.Config.EventBus != "" {
		// Only a real bus: the console is off without one, as its actions must be audited.
		d.Events = c.Events
	}
	if t.Limits != "" {
		d.Limits = &limits.Limiter{Counter: c.Store}
		d.RequestCounter, d.RequestStats = c.Requests, c.Store // request counts live in the limits table
	}
	if t.Users != "" {
		d.Billing = &billing.Biller{Store: c.Store}
		policies, err := gateway.Policies(cat)
		if err != nil {
			return gateway.Deps{}, err
		}
		d.KeyAdmin = &keyadmin.Service{Keys: c.Store, Users: c.Store,
			ModelExists:  func(name string) bool { _, ok := cat.Models[name]; return ok },
			PolicyExists: func(name string) bool { _, err := policies.Lookup(name); return err == nil },
			Audit:        emit.AdminChanges(c.Events, time.Now, c.Log),
			Invalidate:   c.keys.inner.Invalidate}
	}
	if t.CircuitBreakers != "" {
		d.Breakers = breaker.New(c.Store, c.breakers, c.breakerAudit())
	}
	if t.Receipts != "" {
		d.Receipts = c.Store
	}
	if t.Limits != "" || t.Users != "" || t.Receipts != "" {
		d.Ledger = &ledger.Ledger{Store: c.Store, Limits: t.Limits != "", Biller: d.Billing}
	}
	if t.Webhooks != "" && t.Audit != "" {
		d.Webhooks = &webhookadmin.Handlers{Webhooks: c.Store, Dispatcher: c.Dispatcher(), Guard: c.Guard,
			Audit: c.Store.AuditLog(), Events: c.Events, Now: time.Now}
	}
	return d, nil
}

// observer hears every completion: its events, and its metrics record (when Metrics is set).
func (c *Cloud) observer() completion.Observer {
	// GatewayDeps runs once per instance: its limit windows are the instance's.
	events := emit.Observer{Publisher: c.Events, Now: time.Now, Limits: &emit.LimitWindows{}}
	if c.Metrics == nil {
		return events
	}
	return completion.Observers{events, c.Metrics}
}

// breakerAudit publishes each breaker opening and closing, and counts the openings.
func (c *Cloud) breakerAudit() func(context.Context, breaker.Event) {
	if c.Metrics == nil {
		return emit.Breakers(c.Events)
	}
	return metrics.BreakerAudit(c.Metrics, emit.Breakers(c.Events))
}

// secretsAtOnce reads the provider credentials and (when configured) the signing keyset
// concurrently: each is a round trip on a cold function's first request.
func (c *Cloud) secretsAtOnce(ctx context.Context) (func(string) string, *signing.Signer, error) {
	var (
		credential func(string) string
		signer     *signing.Signer
	)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { credential, err = c.Credentials(ctx); return err })
	if c.Config.SigningSecretARN != "" {
		g.Go(func() (err error) { signer, err = c.signer(ctx); return err })
	}
	return credential, signer, g.Wait()
}

// signer reads the signing keyset from its secret. A secret that holds none yet fails the build
// with the one-time fix: signing nothing would serve requests without the receipts they promise.
func (c *Cloud) signer(ctx context.Context) (*signing.Signer, error) {
	ks, err := awssecrets.SigningKeys{API: c.secrets, SecretID: c.Config.SigningSecretARN}.Keyset(ctx)
	if errors.Is(err, signing.ErrNoKeyset) {
		return nil, fmt.Errorf("the signing keyset secret %s holds no keyset yet: run `go run ./cmd/admin rotate-signing-key -secret %s` once: %w",
			c.Config.SigningSecretARN, c.Config.SigningSecretARN, err)
	}
	if err != nil {
		return nil, dependencyError("the signing keyset secret", err)
	}
	return signing.NewSigner(ks, entitlement.Type, receipt.Type)
}

// Dispatcher fans events out to webhook endpoints and runs delivery attempts, queueing retries on
// SECUREAI_WEBHOOK_QUEUE_URL (the webhook dispatcher; the admin function only sends test
// deliveries, which are never queued).
func (c *Cloud) Dispatcher() *webhook.Dispatcher {
	d := &webhook.Dispatcher{Store: c.Store, Log: c.Log, Events: c.Events,
		Poster: &webhook.Poster{Client: c.Guard.Client(), Now: time.Now}}
	if c.Metrics != nil {
		d.Observe = c.Metrics.WebhookDelivery
	}
	if c.Config.WebhookQueueURL != "" {
		d.Queue = sqsqueue.Queue{API: c.sqs, URL: c.Config.WebhookQueueURL}
	}
	return d
}

// Flushing wraps a queue consumer so each batch's published events (a webhook:endpoint_disabled)
// are handed to the bus before the invocation ends: work after it may be frozen for good.
func (c *Cloud) Flushing(h sqsqueue.Handler) sqsqueue.Handler {
	return func(ctx context.Context, batch events.SQSEvent) (events.SQSEventResponse, error) {
		resp, err := h(ctx, batch)
		c.flush(ctx)
		return resp, err
	}
}
