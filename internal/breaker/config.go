package breaker

import (
	"fmt"
	"strconv"
	"time"
)

// ConfigFromEnv reads the breakers' settings through getenv (os.Getenv); unset variables keep
// the defaults, malformed ones are an error naming the variable:
//
//	SECUREAI_BREAKER_THRESHOLD  violations that open a breaker (default 5)
//	SECUREAI_BREAKER_WINDOW     the counting window (default 10m)
//	SECUREAI_BREAKER_COOLDOWN   how long an automatic breaker stays open (default 15m)
//	SECUREAI_BREAKER_CACHE_TTL  how stale a warm instance's view may be (default 5s; 0 or negative: no cache)
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var c Config
	if v := getenv("SECUREAI_BREAKER_THRESHOLD"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return c, fmt.Errorf("SECUREAI_BREAKER_THRESHOLD: want a positive whole number, got %q", v)
		}
		c.Threshold = n
	}
	durations := []struct {
		name     string
		field    *time.Duration
		positive bool
	}{
		{"SECUREAI_BREAKER_WINDOW", &c.Window, true},
		{"SECUREAI_BREAKER_COOLDOWN", &c.Cooldown, true},
		{"SECUREAI_BREAKER_CACHE_TTL", &c.CacheTTL, false},
	}
	for _, d := range durations {
		v := getenv(d.name)
		if v == "" {
			continue
		}
		dur, err := time.ParseDuration(v)
		if err != nil || d.positive && dur <= 0 {
			return c, fmt.Errorf("%s: want a positive duration such as 10m, got %q", d.name, v)
		}
		if !d.positive && dur <= 0 {
			dur = -1 // New reads zero as "default"; the caller asked for no cache
		}
		*d.field = dur
	}
	return c, nil
}
