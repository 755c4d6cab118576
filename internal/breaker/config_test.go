package breaker

import (
	"strings"
	"testing"
	"time"
)

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ConfigFromEnv(env(map[string]string{"SECUREAI_BREAKER_THRESHOLD": "3", "SECUREAI_BREAKER_WINDOW": "1m",
		"SECUREAI_BREAKER_COOLDOWN": "2h", "SECUREAI_BREAKER_CACHE_TTL": "0"}))
	if err != nil || c.Threshold != 3 || c.Window != time.Minute || c.Cooldown != 2*time.Hour || c.CacheTTL >= 0 {
		t.Errorf("got %+v, %v", c, err)
	}
	if c, err := ConfigFromEnv(env(nil)); err != nil || c.Threshold != 0 || c.Window != 0 || c.Cooldown != 0 || c.CacheTTL != 0 {
		t.Errorf("unset: %+v, %v (want the zero Config, which New fills with defaults)", c, err)
	}
	for name, v := range map[string]string{"SECUREAI_BREAKER_THRESHOLD": "0", "SECUREAI_BREAKER_WINDOW": "soon", "SECUREAI_BREAKER_COOLDOWN": "-1m"} {
		if _, err := ConfigFromEnv(env(map[string]string{name: v})); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: err %v, want one naming the variable", name, v, err)
		}
	}
}
