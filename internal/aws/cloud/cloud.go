// Package cloud is what every Lambda function shares, loaded once per cold start: the parsed
// configuration, the AWS SDK configuration (the smithy body guard, X-Ray, bounded retries, calls
// that end before the invocation's deadline), the DynamoDB store, the provider credentials and the
// signing keyset from Secrets Manager, the EventBridge publisher (with its SQS outbox), tracing and
// a JSON logger. A function's main.go calls Load, builds its endpoint from GatewayDeps (or its
// consumer from the pieces) and starts. GatewayDeps turns on exactly the features whose table,
// secret or bus the function's environment names, so each function's IAM policy grants only what
// it configures.
// HTTP adds what an API function needs around its handler: the lazy first-request build, the
// invocation's deadline less a reserve, and the wait for pending events before the response ends.
package cloud

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	eb "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/secureai-gateway/gateway/internal/aws/awsclient"
	"github.com/secureai-gateway/gateway/internal/aws/awssecrets"
	"github.com/secureai-gateway/gateway/internal/aws/eventbridge"
	"github.com/secureai-gateway/gateway/internal/aws/sqsqueue"
	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/idempotency"
	"github.com/secureai-gateway/gateway/internal/metrics"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/reqstats"
	"github.com/secureai-gateway/gateway/internal/sharedhealth"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/store/keycache"
	"github.com/secureai-gateway/gateway/internal/tracing"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

const (
	// reserve is kept back from the invocation's deadline: the whole request (HTTP), and every
	// SDK call, ends this much early, so the function still answers (an error, the error frame of
	// a stream) and hands over its events before the runtime stops it.
	reserve = 500 * time.Millisecond
	// chainReserve is kept back from the request's deadline by a failover chain: the time to
	// write the answer after the last attempt it starts.
	chainReserve = 100 * time.Millisecond
	// DeadlineReserve is reserve, for the template's tests: a function's Timeout less it must end
	// within its API Gateway integration's timeout, so the function's own answer gets through.
	DeadlineReserve = reserve
	// StreamKeepAlive is how long a stream waits for its first content token before it is
	// committed and sent an SSE comment, and then the time between comments while it still waits:
	// under the 5-minute idle limit of a Regional API Gateway endpoint (the template's), with a
	// minute to spare (httpapi.AwaitFirstToken).
	StreamKeepAlive = 4 * time.Minute
	// APIGatewayIdleLimit is how long a Regional endpoint's streamed response may send nothing.
	APIGatewayIdleLimit = 5 * time.Minute
	// The SDK's own retries stay short: a store or secret that is down must not use up the
	// invocation in backoff, and an attempt that hangs is cut and tried again.
	sdkMaxAttempts    = 3
	sdkMaxBackoff     = 500 * time.Millisecond
	sdkAttemptTimeout = 3 * time.Second
)

// Cloud holds what a function loaded at its cold start. Nothing in it has gone over the network.
type Cloud struct {
	Config Config
	Log    *slog.Logger
	Store  *dynamostore.Store
	// Events puts gateway events on the SECUREAI_EVENT_BUS bus, in the background; what the bus
	// has not taken when an invocation must end goes to the SECUREAI_EVENT_OUTBOX_URL queue.
	// event.Discard without a bus.
	Events event.Publisher
	// Bus puts events on the bus at once (the event relay's sender); nil without one.
	Bus event.Sender
	// Guard decides which webhook URLs may be delivered to.
	Guard *webhook.Guard
	// Metrics writes one CloudWatch Embedded Metric Format record per completion (and per
	// breaker opening, webhook delivery, unpublished batch of events) to stdout, the function's
	// log: CloudWatch extracts the metrics, with no call and no agent.
	Metrics metrics.Recorder
	// Tracer traces chat requests and their attempts (OpenTelemetry or X-Ray); nil when off.
	Tracer tracing.Tracer
	// Requests counts the instance's completed chat requests; HTTP writes them to the limits
	// table after an answer, once StatsFlush has passed since the last write.
	Requests *reqstats.Counter
	// KeepAlive is StreamKeepAlive unless a test shortens it.
	KeepAlive time.Duration
	// Health shares provider health with every other instance through the
	// SECUREAI_TABLE_PROVIDER_HEALTH table (each chain's skip_unhealthy hears what they saw fail);
	// HTTP waits for its writes before the response ends. nil without the table.
	Health *sharedhealth.Shared

	secrets  awssecrets.SigningKeysAPI
	sqs      *sqs.Client
	keys     *Keys
	breakers breaker.Config
	catalog  func() (*catalog.Catalog, error)
}

// MustLoad is Load for a function's main: a configuration the function cannot start with ends
// the process at init, the error naming the function and what to fix (the runtime reports the
// failed init; the template's parameter patterns keep such values from deploying).
func MustLoad(function string) *Cloud {
	c, err := Load(context.Background())
	if err != nil {
		log.Fatalf("%s: %v", function, err)
	}
	return c
}

// Load parses the environment and builds the AWS clients, once per cold start. It makes no
// network call (credentials resolve on the first SDK call), so init stays cheap; its errors are
// configuration errors, each naming what to fix.
func Load(ctx context.Context) (*Cloud, error) {
	cfg, err := ParseConfig(os.Getenv)
	if err != nil {
		return nil, err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx,
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts, o.MaxBackoff = sdkMaxAttempts, sdkMaxBackoff
			})
		}),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(sdkAttemptTimeout)))
	if err != nil {
		return nil, fmt.Errorf("cloud: AWS configuration: %w", err)
	}
	awsclient.Guard(&awsCfg)
	// OTLP exports to X-Ray are signed under the function's role, in its region.
	cfg.Tracing.Credentials, cfg.Tracing.Region = awsCfg.Credentials, cmp.Or(cfg.Tracing.Region, awsCfg.Region)
	tracer, err := tracing.New(ctx, cfg.Tracing)
	if err != nil {
		return nil, fmt.Errorf("cloud: tracing: %w", err)
	}
	if cfg.Tracing.XRay {
		tracing.AWS(&awsCfg)
	}
	endBeforeDeadline(&awsCfg, reserve)

	breakers, err := breaker.ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}

	store := dynamostore.New(dynamodb.NewFromConfig(awsCfg), cfg.Tables)
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	// The function's one logger: the lines every 5xx writes (httpapi) go to CloudWatch as JSON.
	slog.SetDefault(log)
	queues := sqs.NewFromConfig(awsCfg)
	emf := metrics.NewEMF(os.Stdout)
	var events event.Publisher = event.Discard{}
	var bus event.Sender
	if cfg.EventBus != "" {
		bus = eventbridge.New(eb.NewFromConfig(awsCfg), cfg.EventBus)
		async := event.NewAsync(bus, log)
		async.Unpublished = emf.EventsUnpublished
		if cfg.EventOutboxURL != "" {
			async.Outbox = sqsqueue.Outbox{API: queues, URL: cfg.EventOutboxURL}
		}
		events = async
	}
	var health *sharedhealth.Shared
	if cfg.Tables.ProviderHealth != "" {
		health = sharedhealth.New(store, sharedhealth.Options{Log: log})
	}
	return &Cloud{
		Health:    health,
		KeepAlive: StreamKeepAlive,
		Config:    cfg,
		Log:       log,
		Store:     store,
		Events:    events,
		Bus:       bus,
		Guard:     webhook.NewGuard(webhookReach(cfg.AllowPrivateWebhooks)),
		Metrics:   emf,
		Tracer:    tracer,
		Requests:  reqstats.NewCounter(cfg.StatsFlush, time.Now),
		secrets:   secretsmanager.NewFromConfig(awsCfg),
		sqs:       queues,
		keys:      &Keys{inner: keycache.New(store, cfg.KeyCacheTTL, time.Now)},
		breakers:  breakers,
		// The demo provider, when on, lives as long as the warm function.
		catalog: sync.OnceValues(func() (*catalog.Catalog, error) {
			cat, _, err := gateway.Catalog(cfg.CatalogPath, cfg.Demo)
			return cat, err
		}),
	}, nil
}

// Credentials resolves a provider's api_key_env: from the Secrets Manager secret when the
// configuration names one (read now), else from the environment.
func (c *Cloud) Credentials(ctx context.Context) (func(string) string, error) {
	if c.Config.ProviderSecretARN == "" {
		return os.Getenv, nil
	}
	credential, err := awssecrets.Credentials(ctx, c.secrets, c.Config.ProviderSecretARN, os.Getenv)
	if err != nil {
		return nil, dependencyError("Secrets Manager", err)
	}
	return credential, nil
}

// ProviderClient is the pooled HTTP client every provider adapter shares (the gateway traces it
// when tracing is on).
func (c *Cloud) ProviderClient() *http.Client { return provider.NewHTTPClient() }

// Engine runs failover chains (the completion service traces each attempt). The handler's
// deadline is already the invocation's less the reserve (HTTP), so the chain keeps back only what
// the gateway needs to write its answer after the last attempt it starts, as the local server does.
// Its provider health is shared with every other instance when the table is configured (Health).
func (c *Cloud) Engine() chain.Engine {
	h := chain.NewHealth(time.Now)
	if c.Health != nil {
		h.Shared = c.Health
	}
	return chain.Engine{Reserve: chainReserve, Health: h}
}

// Idempotency is the Idempotency-Key store; nil when no table is configured, so such requests
// are refused (501) rather than replayed from nowhere.
func (c *Cloud) Idempotency() idempotency.Store {
	if c.Config.Tables.Idempotency == "" {
		return nil
	}
	return c.Store
}

// webhookReach is SECUREAI_WEBHOOKS_ALLOW_PRIVATE in the cloud: public addresses only, or the
// private ranges too (never link-local: the metadata service is refused in every mode).
func webhookReach(allowPrivate bool) webhook.Reach {
	if allowPrivate {
		return webhook.ReachPrivate
	}
	return webhook.ReachPublic
}
