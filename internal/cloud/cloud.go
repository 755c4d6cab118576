// Package cloud assembles the gateway the way a Lambda function runs it: keys in DynamoDB behind
// a warm-function cache, provider credentials from Secrets Manager, X-Ray on every attempt and
// SDK call. functions/*/main.go call Handler and nothing else.
package cloud

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/secureai-gateway/gateway/internal/awsclient"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/secureai-gateway/gateway/internal/awssecrets"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/dynamostore"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/httpapi"
	"github.com/secureai-gateway/gateway/internal/keycache"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/tracing"
)

// reserve is kept back from the Lambda deadline so a chain that runs out of time still answers.
const reserve = 500 * time.Millisecond

// Handler returns the endpoint pick chooses. The gateway is built on the first request, not at
// init, so a cold start makes no network call; a failed build is retried by the next request.
func Handler(pick func(*gateway.Gateway) http.Handler, render httpapi.Render) http.Handler {
	var (
		mu sync.Mutex
		h  http.Handler
	)
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	// The template's AllowedOrigins, quoted as API Gateway wants it ("''": CORS off). API Gateway
	// answers only the preflight; with a proxy integration the function's own answer must carry
	// the origin, or a browser drops it.
	origin := strings.Trim(os.Getenv("SECUREAI_CORS_ORIGIN"), "'")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin != "" {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Access-Control-Expose-Headers", "X-Request-Id, Idempotent-Replayed")
		}
		mu.Lock()
		if h == nil {
			gw, err := build(r.Context(), log)
			if err != nil {
				mu.Unlock()
				render(w, r, fmt.Errorf("gateway start: %w", err))
				return
			}
			h = pick(gw)
		}
		mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func build(ctx context.Context, log *slog.Logger) (gw *gateway.Gateway, err error) {
	env, err := gateway.LoadEnv(false)
	if err != nil {
		return nil, err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("cloud: AWS configuration: %w", err)
	}
	awsclient.Guard(&awsCfg)
	traced := tracing.Enabled()
	if traced {
		tracing.AWS(&awsCfg)
	}

	store := dynamostore.New(dynamodb.NewFromConfig(awsCfg), dynamostore.Tables{
		APIKeys:     os.Getenv("SECUREAI_TABLE_API_KEYS"),
		Idempotency: os.Getenv("SECUREAI_TABLE_IDEMPOTENCY"),
	})
	credential := os.Getenv
	if arn := os.Getenv("SECUREAI_PROVIDER_SECRET_ARN"); arn != "" {
		if credential, err = awssecrets.Credentials(ctx, secretsmanager.NewFromConfig(awsCfg), arn, os.Getenv); err != nil {
			return nil, err
		}
	}
	cat, stopDemo, err := env.Catalog()
	if err != nil {
		return nil, err
	}
	defer func() {
		if gw == nil {
			stopDemo() // the next request builds again, with a demo of its own
		}
	}() // otherwise the demo lives as long as the warm function

	client := provider.NewHTTPClient()
	engine := chain.Engine{Reserve: reserve}
	if traced {
		client = tracing.HTTPClient(client)
		engine.Trace = tracing.Attempt
	}
	deps := gateway.Deps{
		Catalog: cat, Credential: credential, HTTPClient: client, Log: log,
		Keys:   keycache.New(store, env.KeyCacheTTL, time.Now),
		Budget: env.RequestTimeout, MaxBody: env.MaxBody, Engine: engine,
	}
	if os.Getenv("SECUREAI_TABLE_IDEMPOTENCY") != "" {
		deps.Idempotency = store // without a table, Idempotency-Key requests are refused (501)
	}
	return gateway.New(deps)
}
