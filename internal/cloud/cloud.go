// Package cloud is what every Lambda function shares, loaded once per cold start: the parsed
// configuration, the AWS SDK configuration (the smithy body guard, X-Ray, bounded retries, calls
// that end before the invocation's deadline), the DynamoDB store, the provider credentials from
// Secrets Manager, tracing and a JSON logger. A function's main.go calls Load, builds exactly its
// endpoint's (or consumer's) dependencies from these pieces and starts; HTTP adds the lazy
// first-request build an API function needs, an SQS consumer uses the pieces directly.
package cloud

import (
	"context"
	"fmt"
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
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/secureai-gateway/gateway/internal/awsclient"
	"github.com/secureai-gateway/gateway/internal/awssecrets"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/dynamostore"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/idempotency"
	"github.com/secureai-gateway/gateway/internal/keycache"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/tracing"
)

const (
	// reserve is kept back from the invocation's deadline: a chain, a store call or the first
	// request's build that runs out of time ends this much early, so the function still answers.
	reserve = 500 * time.Millisecond
	// The SDK's own retries stay short: a store or secret that is down must not use up the
	// invocation in backoff, and an attempt that hangs is cut and tried again.
	sdkMaxAttempts    = 3
	sdkMaxBackoff     = 500 * time.Millisecond
	sdkAttemptTimeout = 3 * time.Second
)

// Cloud holds what a function loaded at its cold start. Nothing in it has gone over the network.
type Cloud struct {
	Config Config
	// AWS builds every SDK client the functions use (Bedrock keeps its own, without retries).
	AWS   aws.Config
	Log   *slog.Logger
	Store *dynamostore.Store
	// The events issue adds the event publisher here, built from AWS like Store.

	secrets *secretsmanager.Client
	keys    *Keys
	catalog func() (*catalog.Catalog, error)
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
	if cfg.Tracing {
		tracing.AWS(&awsCfg)
	}
	endBeforeDeadline(&awsCfg, reserve)

	store := dynamostore.New(dynamodb.NewFromConfig(awsCfg), cfg.Tables)
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	// The function's one logger: the lines every 5xx writes (httpapi) go to CloudWatch as JSON.
	slog.SetDefault(log)
	return &Cloud{
		Config:  cfg,
		AWS:     awsCfg,
		Log:     log,
		Store:   store,
		secrets: secretsmanager.NewFromConfig(awsCfg),
		keys:    &Keys{inner: keycache.New(store, cfg.KeyCacheTTL, time.Now)},
		// The demo provider, when on, lives as long as the warm function.
		catalog: sync.OnceValues(func() (*catalog.Catalog, error) {
			cat, _, err := gateway.Catalog(cfg.CatalogPath, cfg.Demo)
			return cat, err
		}),
	}, nil
}

// GatewayDeps returns what every endpoint needs: the catalog, the provider credentials (read from
// Secrets Manager now, under ctx), the cached key lookup and the logger. Chat endpoints add
// ProviderClient, Engine and, for the classic surface, Idempotency.
func (c *Cloud) GatewayDeps(ctx context.Context) (gateway.Deps, error) {
	cat, err := c.catalog()
	if err != nil {
		return gateway.Deps{}, err
	}
	credential, err := c.Credentials(ctx)
	if err != nil {
		return gateway.Deps{}, err
	}
	// No Budget: the invocation's deadline bounds every request, and the classic surface's
	// idempotency lease then covers the longest invocation Lambda allows.
	return gateway.Deps{Catalog: cat, Credential: credential, Keys: c.keys, Log: c.Log, MaxBody: c.Config.MaxBody}, nil
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

// ProviderClient is the pooled HTTP client every provider adapter shares, traced when tracing is on.
func (c *Cloud) ProviderClient() *http.Client {
	if c.Config.Tracing {
		return tracing.HTTPClient(provider.NewHTTPClient())
	}
	return provider.NewHTTPClient()
}

// Engine runs failover chains that keep the reserve back from the deadline, one X-Ray
// subsegment per attempt when tracing is on.
func (c *Cloud) Engine() chain.Engine {
	e := chain.Engine{Reserve: reserve}
	if c.Config.Tracing {
		e.Trace = tracing.Attempt
	}
	return e
}

// Idempotency is the Idempotency-Key store; nil when no table is configured, so such requests
// are refused (501) rather than replayed from nowhere.
func (c *Cloud) Idempotency() idempotency.Store {
	if c.Config.Tables.Idempotency == "" {
		return nil
	}
	return c.Store
}
