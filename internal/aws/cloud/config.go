package cloud

import (
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/envvar"
	"github.com/secureai-gateway/gateway/internal/reqstats"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/store/keycache"
	"github.com/secureai-gateway/gateway/internal/tracing"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// Config is every setting a function reads from its environment, parsed in one place: a
// malformed value fails Load with an *envvar.Error naming the variable. template.yaml's
// parameter patterns admit only values this parser accepts (internal/systemtest/templatetest checks both).
// The AWS SDK reads its own AWS_* variables; provider credentials named by the catalog's
// api_key_env are looked up, not parsed.
type Config struct {
	// Tables are SECUREAI_TABLE_API_KEYS (required) and the optional SECUREAI_TABLE_* of each
	// feature (without its table a feature is off in that function: Idempotency-Key requests are
	// refused, nothing is limited or billed, no receipt is kept…).
	Tables dynamostore.Tables
	// SigningSecretARN is SECUREAI_SIGNING_SECRET_ARN: the keyset that signs entitlement tokens
	// and receipts; "" signs nothing.
	SigningSecretARN string
	// EventBus is SECUREAI_EVENT_BUS: where failover and limit events go; "" publishes none.
	EventBus string
	// EventOutboxURL is SECUREAI_EVENT_OUTBOX_URL: the queue where events the bus has not taken
	// before an invocation must end wait for the event relay; "" waits for the bus (at most
	// event.FlushTimeout) and loses what it has not taken then.
	EventOutboxURL string
	// ProviderSecretARN is SECUREAI_PROVIDER_SECRET_ARN, the Secrets Manager secret holding the
	// provider credentials; "" reads them from the environment.
	ProviderSecretARN string
	// WebhookQueueURL is SECUREAI_WEBHOOK_QUEUE_URL: where the webhook dispatcher queues each
	// delivery attempt; "" in every other function.
	WebhookQueueURL string
	// AllowPrivateWebhooks is SECUREAI_WEBHOOKS_ALLOW_PRIVATE, default false: webhook URLs on
	// private, loopback or link-local addresses are refused.
	AllowPrivateWebhooks bool
	CatalogPath          string // SECUREAI_CONFIG: a catalog overlay file
	Demo                 bool   // SECUREAI_DEMO: serve the demo/* models, default false
	// MaxBody is SECUREAI_MAX_BODY_BYTES, DefaultMaxBody unless set, at most MaxBodyCap.
	MaxBody     int64
	KeyCacheTTL time.Duration // SECUREAI_KEY_CACHE_TTL, default 30s; 0 turns the cache off
	// ReadBudget is SECUREAI_READ_BUDGET_PER_MINUTE: each key's requests a minute to the reading
	// routes, per instance.
	ReadBudget int
	// CORSOrigin is SECUREAI_CORS_ORIGIN (the AllowedOrigins parameter, quoted as API Gateway
	// wants it: 'https://app.example.com'), unquoted; "" when CORS is off ('').
	CORSOrigin string
	// SkipUnhealthy is SECUREAI_SKIP_UNHEALTHY: skip_unhealthy for requests that do not say.
	SkipUnhealthy bool
	// Tracing is SECUREAI_TRACES: otlp by default, to the region's X-Ray OTLP endpoint signed
	// with the function's role, or to OTEL_EXPORTER_OTLP_* (the ADOT layer's collector or any
	// other); xray for the X-Ray SDK (accounts without Transaction Search); off.
	// SECUREAI_TRACE_CONTENT records prompts and answers.
	Tracing tracing.Config
	// StatsFlush is SECUREAI_REQUEST_STATS_FLUSH, default 1m: how long a warm instance counts
	// completed chat requests in memory before an invocation writes them, after its answer.
	StatsFlush time.Duration
}

// ParseConfig reads the configuration through getenv (os.Getenv in a function).
func ParseConfig(getenv func(string) string) (Config, error) {
	r := envvar.New(getenv)
	c := Config{
		Tables: dynamostore.Tables{
			APIKeys:         r.Check("SECUREAI_TABLE_API_KEYS", "", tableWant, tableName.MatchString),
			Idempotency:     table(r, "SECUREAI_TABLE_IDEMPOTENCY"),
			Limits:          table(r, "SECUREAI_TABLE_LIMITS"),
			Users:           table(r, "SECUREAI_TABLE_USERS"),
			Receipts:        table(r, "SECUREAI_TABLE_RECEIPTS"),
			CircuitBreakers: table(r, "SECUREAI_TABLE_CIRCUIT_BREAKERS"),
			Webhooks:        table(r, "SECUREAI_TABLE_WEBHOOKS"),
			WebhookAttempts: table(r, "SECUREAI_TABLE_WEBHOOK_ATTEMPTS"),
			Audit:           table(r, "SECUREAI_TABLE_AUDIT"),
			ProviderHealth:  table(r, "SECUREAI_TABLE_PROVIDER_HEALTH"),
		},
		SigningSecretARN:     r.String("SECUREAI_SIGNING_SECRET_ARN", ""),
		EventBus:             r.String("SECUREAI_EVENT_BUS", ""),
		EventOutboxURL:       r.String("SECUREAI_EVENT_OUTBOX_URL", ""),
		ProviderSecretARN:    r.String("SECUREAI_PROVIDER_SECRET_ARN", ""),
		CatalogPath:          r.String("SECUREAI_CONFIG", ""),
		Demo:                 r.Bool("SECUREAI_DEMO", false),
		WebhookQueueURL:      r.String("SECUREAI_WEBHOOK_QUEUE_URL", ""),
		AllowPrivateWebhooks: r.Bool(webhook.EnvAllowPrivate, false),
		MaxBody:              maxBody(r),
		KeyCacheTTL:          r.Duration("SECUREAI_KEY_CACHE_TTL", keycache.DefaultTTL),
		SkipUnhealthy:        r.Bool("SECUREAI_SKIP_UNHEALTHY", false),
		ReadBudget:           int(r.Positive("SECUREAI_READ_BUDGET_PER_MINUTE", httpapi.DefaultReadBudget)),
		CORSOrigin: strings.Trim(r.Check("SECUREAI_CORS_ORIGIN", "", "an origin in single quotes such as 'https://app.example.com', '*' or ''",
			optional(quotedOrigin)), "'"),
		Tracing:    tracing.ParseConfig(r),
		StatsFlush: r.PositiveDuration("SECUREAI_REQUEST_STATS_FLUSH", reqstats.DefaultFlushInterval),
	}
	return c, r.Err()
}

// A Lambda invocation's request payload is capped at 6 MB (6,291,456 bytes), and the API Gateway
// event around a body is larger than the body: headers, the request context, and JSON escaping of
// every quote and control character in it. DefaultMaxBody leaves a third of the cap for that, so a
// body the function accepts always reaches it; MaxBodyCap is the most the setting may ask for.
const (
	DefaultMaxBody int64 = 4 << 20
	MaxBodyCap     int64 = 6_291_456
)

// maxBody reads SECUREAI_MAX_BODY_BYTES: 1 to MaxBodyCap bytes, since a larger body could never
// reach the function.
func maxBody(r *envvar.Reader) int64 {
	v := r.Check("SECUREAI_MAX_BODY_BYTES", strconv.FormatInt(DefaultMaxBody, 10),
		"a whole number of bytes from 1 to "+strconv.FormatInt(MaxBodyCap, 10)+" (the Lambda payload cap)",
		func(v string) bool {
			n, err := strconv.ParseInt(v, 10, 64)
			return err == nil && n > 0 && n <= MaxBodyCap
		})
	n, _ := strconv.ParseInt(v, 10, 64) // Check accepted it or returned the default
	return n
}

// table reads an optional table name.
func table(r *envvar.Reader, name string) string {
	return r.Check(name, "", tableWant, optional(tableName.MatchString))
}

// tableName is DynamoDB's rule for table names.
var tableName = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)

const tableWant = "a DynamoDB table name (3 to 255 of A-Z a-z 0-9 _ . -)"

func optional(valid func(string) bool) func(string) bool {
	return func(v string) bool { return v == "" || valid(v) }
}

// quotedOrigin accepts what API Gateway's CORS AllowOrigin takes and a browser compares against
// its Origin header, in single quotes: nothing (CORS off), *, or scheme://host[:port] alone.
func quotedOrigin(v string) bool {
	if len(v) < 2 || v[0] != '\'' || v[len(v)-1] != '\'' {
		return false
	}
	inner := v[1 : len(v)-1]
	if inner == "" || inner == "*" {
		return true
	}
	u, err := url.Parse(inner)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.Hostname() != "" &&
		u.User == nil && u.Path == "" && u.RawQuery == "" && u.Fragment == "" && !strings.HasSuffix(inner, "?") && !strings.HasSuffix(inner, "#")
}
