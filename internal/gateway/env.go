package gateway

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/demo"
)

// Env is the gateway's configuration from the environment, documented in the README.
type Env struct {
	Port           string        // PORT, default 8080
	ConfigPath     string        // SECUREAI_CONFIG: catalog overlay file
	DataDir        string        // SECUREAI_DATA_DIR: the embedded store's folder, default .secureai
	RequestTimeout time.Duration // SECUREAI_REQUEST_TIMEOUT: local request budget, default 5m
	MaxBody        int64         // SECUREAI_MAX_BODY_BYTES, default 8 MiB
	Demo           bool          // SECUREAI_DEMO: the built-in demo provider, default on locally
	BootstrapKey   string        // SECUREAI_BOOTSTRAP_KEY: the first admin key's secret
	KeyCacheTTL    time.Duration // SECUREAI_KEY_CACHE_TTL: how long a warm Lambda trusts a key it read, default 30s
}

// LoadEnv reads the environment; a malformed value is an error naming the variable.
func LoadEnv(demoDefault bool) (Env, error) {
	e := Env{
		Port:         getenv("PORT", "8080"),
		ConfigPath:   os.Getenv("SECUREAI_CONFIG"),
		DataDir:      getenv("SECUREAI_DATA_DIR", ".secureai"),
		BootstrapKey: os.Getenv("SECUREAI_BOOTSTRAP_KEY"),
	}
	var err error
	if e.RequestTimeout, err = time.ParseDuration(getenv("SECUREAI_REQUEST_TIMEOUT", "5m")); err != nil || e.RequestTimeout <= 0 {
		return e, fmt.Errorf("SECUREAI_REQUEST_TIMEOUT: want a positive duration such as 5m, got %q", os.Getenv("SECUREAI_REQUEST_TIMEOUT"))
	}
	if e.MaxBody, err = strconv.ParseInt(getenv("SECUREAI_MAX_BODY_BYTES", strconv.Itoa(DefaultMaxBody)), 10, 64); err != nil || e.MaxBody <= 0 {
		return e, fmt.Errorf("SECUREAI_MAX_BODY_BYTES: want a positive number of bytes, got %q", os.Getenv("SECUREAI_MAX_BODY_BYTES"))
	}
	if e.KeyCacheTTL, err = time.ParseDuration(getenv("SECUREAI_KEY_CACHE_TTL", "30s")); err != nil || e.KeyCacheTTL < 0 {
		return e, fmt.Errorf("SECUREAI_KEY_CACHE_TTL: want a duration such as 30s, got %q", os.Getenv("SECUREAI_KEY_CACHE_TTL"))
	}
	if e.Demo, err = strconv.ParseBool(getenv("SECUREAI_DEMO", strconv.FormatBool(demoDefault))); err != nil {
		return e, fmt.Errorf("SECUREAI_DEMO: want true or false, got %q", os.Getenv("SECUREAI_DEMO"))
	}
	return e, nil
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Catalog loads the model catalog the environment names and, when SECUREAI_DEMO is on, starts the
// demo provider and adds its models. stop ends the demo provider (a no-op without one).
func (e Env) Catalog() (cat *catalog.Catalog, stop func(), err error) {
	if cat, err = catalog.Load(e.ConfigPath); err != nil {
		return nil, nil, err
	}
	if !e.Demo {
		return cat, func() {}, nil
	}
	d, err := demo.Start()
	if err != nil {
		return nil, nil, err
	}
	cat.Merge(d.Catalog)
	return cat, func() { _ = d.Close() }, nil
}
