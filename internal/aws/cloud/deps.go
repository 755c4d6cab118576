package cloud

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/aws/awssecrets"
	"github.com/secureai-gateway/gateway/internal/aws/sqsqueue"
	"github.com/secureai-gateway/gateway/internal/entitlement"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/internal/webhook"
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
//	SECUREAI_TABLE_PROVIDER_HEALTH   provider health shared by every instance (Engine's Health, Load)
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
	// No Budget: HTTP bounds every request by the invocation's deadline, and the classic surface's
	// idempotency lease then covers the longest invocation Lambda allows.
	d := gateway.Deps{SkipUnhealthy: c.Config.SkipUnhealthy,
		Catalog: cat, Credential: credential, Keys: c.keys, Log: c.Log, MaxBody: c.Config.MaxBody,
		HTTPClient: c.ProviderClient(), Engine: c.Engine(), Idempotency: c.Idempotency(),
		Tracer:      c.Tracer,
		KeyCacheTTL: c.Config.KeyCacheTTL, // another warm function may keep a changed key this long
		Signer:      signer,
		ReadBudget:  &httpapi.KeyBudget{PerMinute: cmp.Or(c.Config.ReadBudget, httpapi.DefaultReadBudget)}, // per instance
	}
	if c.Config.EventBus != "" {
		// Only a real bus: the console is off without one, as its actions must be audited.
		d.Events = c.Events
	}
	if err := d.Attach(c.stores()); err != nil {
		return gateway.Deps{}, err
	}
	return d, nil
}

// FeatureEnv names, for each feature an endpoint needs (gateway.Endpoint.Needs), the environment
// variables that turn it on in a function, as GatewayDeps and Load read them; template.yaml gives
// each function exactly its endpoint's (internal/systemtest/templatetest checks). NeedsAdapters is code, not
// configuration: the function's main passes the adapters.
var FeatureEnv = map[gateway.Needs][]string{
	gateway.NeedsCredentials: {"SECUREAI_PROVIDER_SECRET_ARN"},
	gateway.NeedsIdempotency: {"SECUREAI_TABLE_IDEMPOTENCY"},
	gateway.NeedsLimits:      {"SECUREAI_TABLE_LIMITS"},
	gateway.NeedsUsers:       {"SECUREAI_TABLE_USERS"},
	gateway.NeedsReceipts:    {"SECUREAI_TABLE_RECEIPTS"},
	gateway.NeedsBreakers:    {"SECUREAI_TABLE_CIRCUIT_BREAKERS"},
	gateway.NeedsSigning:     {"SECUREAI_SIGNING_SECRET_ARN"},
	gateway.NeedsWebhooks: {"SECUREAI_TABLE_WEBHOOKS", "SECUREAI_TABLE_WEBHOOK_ATTEMPTS", "SECUREAI_TABLE_AUDIT",
		webhook.EnvAllowPrivate},
	gateway.NeedsEvents: {"SECUREAI_EVENT_BUS", "SECUREAI_EVENT_OUTBOX_URL"},
	gateway.NeedsHealth: {"SECUREAI_TABLE_PROVIDER_HEALTH"},
}

// stores are the tables the function's environment names, each turning its features on.
func (c *Cloud) stores() gateway.Stores {
	t := c.Config.Tables
	s := gateway.Stores{Events: c.Events, Metrics: c.Metrics, BreakerConfig: c.breakers}
	if t.Limits != "" {
		s.Counter = c.Store
		s.Requests, s.RequestStats = c.Requests, c.Store // request counts live in the limits table
	}
	if t.Users != "" {
		s.Keys, s.Users, s.Invalidate = c.Store, c.Store, c.keys.inner.Invalidate
	}
	if t.Receipts != "" {
		s.Receipts = c.Store
	}
	if t.Limits != "" || t.Users != "" || t.Receipts != "" {
		s.Books = c.Store
	}
	if t.CircuitBreakers != "" {
		s.Breakers = c.Store
	}
	if t.Webhooks != "" && t.Audit != "" {
		s.Webhooks, s.AuditLog, s.Dispatcher, s.Guard = c.Store, c.Store.AuditLog(), c.Dispatcher(), c.Guard
	}
	return s
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
