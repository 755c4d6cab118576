package cloud

import (
	"errors"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/envvar"
)

func TestParseConfig(t *testing.T) {
	base := map[string]string{"SECUREAI_TABLE_API_KEYS": "keys-table"}
	t.Run("defaults", func(t *testing.T) {
		c, err := ParseConfig(lookup(base, nil))
		if err != nil {
			t.Fatal(err)
		}
		if c.Tables.APIKeys != "keys-table" || c.Tables.Idempotency != "" || c.Demo || c.KeyCacheTTL != 30*time.Second ||
			c.MaxBody != DefaultMaxBody || DefaultMaxBody > MaxBodyCap || c.CORSOrigin != "" || c.Tracing.XRay || c.Tracing.OTLP {
			t.Errorf("defaults: %+v", c)
		}
	})
	t.Run("set", func(t *testing.T) {
		c, err := ParseConfig(lookup(base, map[string]string{
			"SECUREAI_TABLE_IDEMPOTENCY": "idem.table_1", "SECUREAI_DEMO": "true", "SECUREAI_KEY_CACHE_TTL": "0",
			"SECUREAI_MAX_BODY_BYTES": "1024", "SECUREAI_CORS_ORIGIN": "'https://app.example.com:8443'",
			"SECUREAI_PROVIDER_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:keys",
			"AWS_LAMBDA_FUNCTION_NAME":     "models", "SECUREAI_TRACES": "xray",
			"SECUREAI_TABLE_LIMITS": "limits", "SECUREAI_TABLE_USERS": "users", "SECUREAI_TABLE_RECEIPTS": "receipts",
			"SECUREAI_TABLE_CIRCUIT_BREAKERS": "breakers", "SECUREAI_SIGNING_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:signing",
			"SECUREAI_EVENT_BUS": "bus", "SECUREAI_WEBHOOK_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/q",
			"SECUREAI_WEBHOOKS_ALLOW_PRIVATE": "true",
		}))
		if err != nil {
			t.Fatal(err)
		}
		if c.Tables.Idempotency != "idem.table_1" || !c.Demo || c.KeyCacheTTL != 0 || c.MaxBody != 1024 ||
			c.CORSOrigin != "https://app.example.com:8443" || c.ProviderSecretARN == "" || !c.Tracing.XRay ||
			c.Tables.Limits != "limits" || c.Tables.Users != "users" || c.Tables.Receipts != "receipts" ||
			c.Tables.CircuitBreakers != "breakers" || c.SigningSecretARN == "" || c.EventBus != "bus" ||
			c.WebhookQueueURL == "" || !c.AllowPrivateWebhooks {
			t.Errorf("parsed: %+v", c)
		}
	})
	// Each malformed value fails the load with an error naming its variable.
	for _, tc := range []struct{ name, value string }{
		{"SECUREAI_TABLE_API_KEYS", ""},
		{"SECUREAI_TABLE_API_KEYS", "no spaces allowed"},
		{"SECUREAI_TABLE_IDEMPOTENCY", "x"},
		{"SECUREAI_KEY_CACHE_TTL", "30"},
		{"SECUREAI_KEY_CACHE_TTL", "-5s"},
		{"SECUREAI_MAX_BODY_BYTES", "8MiB"},
		{"SECUREAI_MAX_BODY_BYTES", "0"},
		{"SECUREAI_MAX_BODY_BYTES", "6291457"}, // past the Lambda payload cap: no body could reach the function
		{"SECUREAI_WEBHOOKS_ALLOW_PRIVATE", "maybe"},
		{"SECUREAI_DEMO", "yes"},
		{"SECUREAI_CORS_ORIGIN", "https://app.example.com"},
		{"SECUREAI_CORS_ORIGIN", "'https://app.example.com/path'"},
		{"SECUREAI_CORS_ORIGIN", "'app.example.com'"},
		{"SECUREAI_CORS_ORIGIN", "'"},
		{"AWS_XRAY_SDK_DISABLED", "off"},
		{"SECUREAI_TRACES", "x-ray"},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			_, err := ParseConfig(lookup(base, map[string]string{tc.name: tc.value}))
			var bad *envvar.Error
			if !errors.As(err, &bad) || bad.Name != tc.name {
				t.Fatalf("error %v, want one naming %s", err, tc.name)
			}
		})
	}
}

// lookup reads over, then base.
func lookup(base, over map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := over[k]; ok {
			return v
		}
		return base[k]
	}
}
