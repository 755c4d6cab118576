package localserver

import (
	"net/netip"
	"os"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/envvar"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"github.com/secureai-gateway/gateway/internal/reqstats"
	"github.com/secureai-gateway/gateway/internal/tracing"
)

// Env is the local server's configuration from the environment, documented in the README. The
// Lambda functions read theirs in internal/aws/cloud, through the same envvar parsers.
type Env struct {
	Port           string         // PORT, default 8080
	ConfigPath     string         // SECUREAI_CONFIG: catalog overlay file
	DataDir        string         // SECUREAI_DATA_DIR: the embedded store's folder, default .secureai
	RequestTimeout time.Duration  // SECUREAI_REQUEST_TIMEOUT: local request budget, default 5m
	MaxBody        int64          // SECUREAI_MAX_BODY_BYTES, default 8 MiB
	Demo           bool           // SECUREAI_DEMO: the built-in demo provider, default on
	BootstrapKey   string         // SECUREAI_BOOTSTRAP_KEY: the first admin key's secret
	SkipUnhealthy  bool           // SECUREAI_SKIP_UNHEALTHY: skip_unhealthy for requests that do not say, default false
	ReadBudget     int            // SECUREAI_READ_BUDGET_PER_MINUTE: each key's requests a minute to the reading routes
	HoldMargin     time.Duration  // SECUREAI_HOLD_MARGIN: how long past its deadline an unsettled reservation is refunded
	Tracing        tracing.Config // OTEL_EXPORTER_OTLP_*, SECUREAI_TRACES and SECUREAI_TRACE_CONTENT: off unless an OTLP endpoint is set
	StatsFlush     time.Duration  // SECUREAI_REQUEST_STATS_FLUSH: how often request counts are written, default 1m
	// TrustedProxies is SECUREAI_TRUSTED_PROXIES: the reverse proxies (addresses or CIDRs) whose
	// X-Forwarded-Proto and X-Forwarded-For the console believes; default none.
	TrustedProxies []netip.Prefix
}

// LoadEnv reads the environment; a malformed value is an *envvar.Error naming the variable.
func LoadEnv() (Env, error) {
	r := envvar.New(os.Getenv)
	e := Env{
		Port:           r.String("PORT", "8080"),
		ConfigPath:     r.String("SECUREAI_CONFIG", ""),
		DataDir:        r.String("SECUREAI_DATA_DIR", ".secureai"),
		RequestTimeout: r.PositiveDuration("SECUREAI_REQUEST_TIMEOUT", 5*time.Minute),
		MaxBody:        r.Positive("SECUREAI_MAX_BODY_BYTES", gateway.DefaultMaxBody),
		Demo:           r.Bool("SECUREAI_DEMO", true),
		BootstrapKey:   r.String("SECUREAI_BOOTSTRAP_KEY", ""),
		SkipUnhealthy:  r.Bool("SECUREAI_SKIP_UNHEALTHY", false),
		ReadBudget:     int(r.Positive("SECUREAI_READ_BUDGET_PER_MINUTE", httpapi.DefaultReadBudget)),
		HoldMargin:     r.PositiveDuration("SECUREAI_HOLD_MARGIN", ledger.DefaultHoldMargin),
		Tracing:        tracing.ParseConfig(r),
		StatsFlush:     r.PositiveDuration("SECUREAI_REQUEST_STATS_FLUSH", reqstats.DefaultFlushInterval),
		TrustedProxies: r.Prefixes("SECUREAI_TRUSTED_PROXIES"),
	}
	e.Tracing.XRay = false // the local server has no X-Ray daemon
	return e, r.Err()
}
