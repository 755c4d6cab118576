package cloudbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	eb "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/aws/awssecrets"
	"github.com/secureai-gateway/gateway/internal/bench/latencybench"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/childproc"
)

// stopGrace is how long a tool this benchmark started has to end after SIGTERM.
const stopGrace = 3 * time.Second

// startMoto starts root's moto_server on a loopback port.
func startMoto(root string) (*childproc.Proc, string, error) {
	addr, err := childproc.FreeAddr()
	if err != nil {
		return nil, "", err
	}
	host, port, _ := strings.Cut(addr, ":")
	p, err := childproc.Start(exec.Command(filepath.Join(root, ".venv/bin/moto_server"), "-H", host, "-p", port))
	if err != nil {
		return nil, "", fmt.Errorf("starting moto_server (make test-tools installs it): %w", err)
	}
	url := "http://" + addr
	if err := p.WaitHTTP(url+"/moto-api/", 60*time.Second); err != nil {
		p.Stop(stopGrace)
		return nil, "", err
	}
	return p, url, nil
}

// deployment is what the function's environment names, created on moto: openai-chat's tables,
// secrets, bus and outbox as template.yaml gives them, one API key, and a catalog overlay whose
// provider is the fake upstream. It is the minimum of cmd/localaws's setup (tables, key, keyset)
// plus what the template adds for this function (provider secret, bus, outbox), made here
// because localaws creates no bus or outbox.
type deployment struct {
	secret string   // the API key's secret
	env    []string // the function's NAME=value settings
}

func deploy(ctx context.Context, motoURL, proxyURL, upstreamURL, dir string) (*deployment, error) {
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(motoURL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
	tables := dynamostore.Tables{APIKeys: "bench-keys", Limits: "bench-limits", Users: "bench-users",
		Receipts: "bench-receipts", CircuitBreakers: "bench-breakers", ProviderHealth: "bench-health"}
	db := dynamodb.NewFromConfig(cfg)
	if err := dynamostore.CreateTables(ctx, db, tables); err != nil {
		return nil, err
	}
	secret := apikey.NewSecret()
	hash, _ := apikey.Hash(secret)
	// Limits high enough never to refuse the benchmark (the defaults allow 60 a minute); they are
	// still counted, so the admission transaction runs as it does in a deployment.
	never := apikey.Limit(1 << 40)
	if err := dynamostore.New(db, tables).CreateKey(ctx, &apikey.Key{ID: "key_bench", Hash: hash,
		Prefix: apikey.Prefix(secret), Name: "bench", CreatedAt: time.Now().UTC(),
		RateLimit: apikey.RateLimit{RequestsPerMinute: never, RequestsPerHour: never}, DailyLimit: never, MonthlyLimit: never}); err != nil {
		return nil, err
	}
	sm := secretsmanager.NewFromConfig(cfg)
	signingSecret := "bench-signing-keys"
	if _, err := signing.Rotate(ctx, awssecrets.SigningKeys{API: sm, SecretID: signingSecret}, time.Now(), signing.DefaultKeepPrevious); err != nil {
		return nil, err
	}
	prov, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("bench-provider-keys"),
		SecretString: aws.String(`{"OPENAI_API_KEY":"sk-not-real"}`)})
	if err != nil {
		return nil, err
	}
	if _, err := eb.NewFromConfig(cfg).CreateEventBus(ctx, &eb.CreateEventBusInput{Name: aws.String("bench-events")}); err != nil {
		return nil, err
	}
	outbox, err := sqs.NewFromConfig(cfg).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bench-outbox")})
	if err != nil {
		return nil, err
	}
	overlay := filepath.Join(dir, "catalog.json")
	raw, err := json.Marshal(benchCatalog(upstreamURL))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(overlay, raw, 0o600); err != nil {
		return nil, err
	}
	env := []string{
		// Nothing from the caller's AWS setup may reach the function: moto only, dummy credentials.
		"AWS_REGION=us-east-1", "AWS_DEFAULT_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_XRAY_SDK_DISABLED=true", "SECUREAI_TRACES=off", "AWS_SAM_LOCAL=",
		"AWS_ENDPOINT_URL=" + proxyURL,
		"SECUREAI_TABLE_API_KEYS=" + tables.APIKeys, "SECUREAI_TABLE_LIMITS=" + tables.Limits,
		"SECUREAI_TABLE_USERS=" + tables.Users, "SECUREAI_TABLE_RECEIPTS=" + tables.Receipts,
		"SECUREAI_TABLE_CIRCUIT_BREAKERS=" + tables.CircuitBreakers, "SECUREAI_TABLE_PROVIDER_HEALTH=" + tables.ProviderHealth,
		"SECUREAI_SIGNING_SECRET_ARN=" + signingSecret, "SECUREAI_PROVIDER_SECRET_ARN=" + aws.ToString(prov.ARN),
		"SECUREAI_EVENT_BUS=bench-events", "SECUREAI_EVENT_OUTBOX_URL=" + aws.ToString(outbox.QueueUrl),
		"SECUREAI_CONFIG=" + overlay, "SECUREAI_DEMO=false",
	}
	return &deployment{secret: secret, env: env}, nil
}

// benchCatalog is latencybench's catalog (its upstream models under its model names) for the
// upstream at base, as the overlay file the function reads.
func benchCatalog(base string) *catalog.Catalog {
	return &catalog.Catalog{
		Providers: map[string]catalog.ProviderConfig{"bench": {Type: "openai", BaseURL: base + "/v1"}},
		Models: map[string]*catalog.Model{
			latencybench.Model:     {Name: latencybench.Model, Provider: "bench", Upstream: latencybench.UpstreamModel},
			latencybench.FailModel: {Name: latencybench.FailModel, Provider: "bench", Upstream: latencybench.FailUpstreamModel},
		},
	}
}

// functionEnv is this process's environment without any AWS_ or SECUREAI_ setting, then the
// deployment's.
func functionEnv(d *deployment) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "SECUREAI_") {
			env = append(env, kv)
		}
	}
	return append(env, d.env...)
}
