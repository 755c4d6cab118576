package cloud_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/endpoint/models"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/idempotency"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// stallProxy forwards to moto until stalled; then it accepts every request and never answers,
// like a dependency that hangs. Break makes it hang or fail only one operation; Observe sees
// each request first.
type stallProxy struct {
	URL     string
	stalled atomic.Bool
	broken  atomic.Pointer[breakage]
	observe atomic.Pointer[func(*http.Request)]
}

func (p *stallProxy) Observe(f func(*http.Request)) { p.observe.Store(&f) }

// breakage is one operation (an X-Amz-Target such as AWSEvents.PutEvents) that hangs, or fails
// with an error the SDK does not retry.
type breakage struct {
	target string
	fail   bool
}

func (p *stallProxy) Break(target string, fail bool) { p.broken.Store(&breakage{target, fail}) }
func (p *stallProxy) Heal()                          { p.broken.Store(nil) }

func newStallProxy(t *testing.T, target string) *stallProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{}
	forward := httputil.NewSingleHostReverseProxy(u)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := p.observe.Load(); f != nil {
			(*f)(r)
		}
		b := p.broken.Load()
		if b != nil && b.fail && r.Header.Get("X-Amz-Target") == b.target {
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"__type":"AccessDeniedException","message":"denied by the test"}`))
			return
		}
		if p.stalled.Load() || b != nil && r.Header.Get("X-Amz-Target") == b.target {
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // runs first: stalled handlers return, so Close can finish
	p.URL = srv.URL
	return p
}

// fixture is a deployment on moto behind a stallProxy: the keys table with one key, the
// provider secret, and the function's environment pointing at the proxy.
type fixture struct {
	proxy  *stallProxy
	secret string // the stored key's secret
}

func newFixture(t *testing.T) fixture {
	endpoint := testenv.Moto(t)
	cfg := testenv.AWSConfig(t, endpoint)
	ctx := context.Background()
	db := dynamodb.NewFromConfig(cfg)
	tables := dynamostore.Tables{APIKeys: testenv.UniqueName(t, "keys"), Idempotency: testenv.UniqueName(t, "idem")}
	if err := dynamostore.CreateTables(ctx, db, tables); err != nil {
		t.Fatal(err)
	}
	secret := apikey.NewSecret()
	hash, _ := apikey.Hash(secret)
	if err := dynamostore.New(db, tables).CreateKey(ctx, &apikey.Key{ID: apikey.NewID(), Hash: hash,
		Prefix: apikey.Prefix(secret), Name: "test", CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	arn, err := secretsmanager.NewFromConfig(cfg).CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(testenv.UniqueName(t, "provider-keys")), SecretString: aws.String(`{"OPENAI_API_KEY":"sk-not-real"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	proxy := newStallProxy(t, endpoint)
	for k, v := range map[string]string{
		"AWS_REGION": cfg.Region, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_CONFIG_FILE": os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL": proxy.URL, "AWS_XRAY_SDK_DISABLED": "true", "SECUREAI_TRACES": "off", "AWS_LAMBDA_FUNCTION_NAME": "",
		"SECUREAI_TABLE_API_KEYS": tables.APIKeys, "SECUREAI_TABLE_IDEMPOTENCY": tables.Idempotency,
		"SECUREAI_PROVIDER_SECRET_ARN": aws.ToString(arn.ARN), "SECUREAI_DEMO": "false", "SECUREAI_CONFIG": "",
		"SECUREAI_CORS_ORIGIN": "", "SECUREAI_KEY_CACHE_TTL": "",
	} {
		t.Setenv(k, v)
	}
	return fixture{proxy: proxy, secret: secret}
}

// load runs cloud.Load and records its log.
func load(t *testing.T) (*cloud.Cloud, *bytes.Buffer) {
	c, err := cloud.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	c.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	// Load made its logger the default, as a function's main does: the 5xx lines go there.
	slog.SetDefault(c.Log)
	t.Cleanup(func() { slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil))) })
	return c, &logs
}

func modelsOf(c *cloud.Cloud) http.Handler {
	return c.Endpoint(models.Endpoint, nil)
}

// serve sends GET /v1/models under a deadline of budget and returns the answer and how long it took.
func serve(h http.Handler, secret string, budget time.Duration) (*httptest.ResponseRecorder, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, "GET", "/v1/models", nil)
	r.Header.Set("Authorization", "Bearer "+secret)
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, r)
	return rec, time.Since(start)
}

// A Secrets Manager that stalls on the first request must not hold the build until the runtime
// kills the function: the answer is a JSON 503 with Retry-After and X-Request-Id before the
// deadline, logged with the request id, route and cause; the next request builds again.
func TestFirstRequestBuildEndsBeforeTheDeadline(t *testing.T) {
	fx := newFixture(t)
	c, logs := load(t)
	h := modelsOf(c)

	fx.proxy.stalled.Store(true)
	const budget = 2 * time.Second
	rec, took := serve(h, fx.secret, budget)
	if took > budget-400*time.Millisecond {
		t.Fatalf("answered after %v, not the reserve before the %v deadline", took, budget)
	}
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("status %d Retry-After %q, want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	id := rec.Header().Get("X-Request-Id")
	if id == "" {
		t.Error("no X-Request-Id")
	}
	var body struct{ Error struct{ Type, Code string } }
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != "service_unavailable" {
		t.Errorf("body %s (%v), want the OpenAI error envelope with code service_unavailable", rec.Body, err)
	}
	var line struct {
		RequestID string `json:"request_id"`
		Route     string `json:"route"`
		Cause     string `json:"cause"`
	}
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("log %q is not one JSON line: %v", logs, err)
	}
	if line.RequestID != id || line.Route != "GET /v1/models" || !strings.Contains(line.Cause, "provider credentials secret") {
		t.Errorf("log line %+v, want request id %s, route GET /v1/models and the cause", line, id)
	}

	fx.proxy.stalled.Store(false)
	if rec, _ := serve(h, fx.secret, 10*time.Second); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"openai/`) {
		t.Errorf("after the outage: status %d body %s, want the models listed", rec.Code, rec.Body)
	}
}

// Every dependency call a function makes ends the reserve before the caller's deadline when the
// dependency accepts the connection and never answers: the function still has time to say so.
func TestDependencyCallsEndBeforeTheDeadline(t *testing.T) {
	fx := newFixture(t)
	c, _ := load(t)
	d, err := c.GatewayDeps(context.Background()) // the secret is read while moto answers
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := apikey.Hash(fx.secret)
	for _, tc := range []struct {
		name string
		call func(context.Context) error
		// outage: the error must say the dependency is unavailable (503 with Retry-After).
		outage bool
	}{
		{"key lookup", func(ctx context.Context) error { _, err := d.Keys.KeyByHash(ctx, hash); return err }, true},
		{"provider credentials", func(ctx context.Context) error { _, err := c.Credentials(ctx); return err }, true},
		{"idempotency claim", func(ctx context.Context) error {
			now := time.Now()
			_, err := c.Idempotency().Claim(ctx, "key", "idem-1", idempotency.Pending{RequestHash: "h", Token: "t", Now: now, LeaseUntil: now.Add(time.Minute)})
			return err
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx.proxy.stalled.Store(true)
			defer fx.proxy.stalled.Store(false)
			const budget = 2 * time.Second
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			defer cancel()
			start := time.Now()
			err := tc.call(ctx)
			// Before the deadline, so the function can still answer; how long before is the
			// reserve's business, and a busy machine's scheduling moves it.
			if took := time.Since(start); took >= budget-100*time.Millisecond {
				t.Fatalf("returned after %v, not before the %v deadline", took, budget)
			}
			if err == nil {
				t.Fatal("a dependency that never answered gave no error")
			}
			var f *fault.Error
			if tc.outage && (!errors.As(err, &f) || f.K != fault.Unavailable || f.RetryAfter <= 0) {
				t.Errorf("error %v, want fault.Unavailable with a Retry-After", err)
			}
		})
	}
}

// With CORS on, a browser reads an answer only if the function itself names the origin (API
// Gateway's CORS setting covers just a proxy integration's preflight) — failed starts included.
func TestCORSOriginOnEveryAnswer(t *testing.T) {
	fx := newFixture(t)
	for _, tc := range []struct{ env, want string }{
		{"'https://app.example.com'", "https://app.example.com"},
		{"''", ""},
		{"", ""},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv("SECUREAI_CORS_ORIGIN", tc.env)
			c, _ := load(t)
			h := c.HTTP(openaiapi.Render, func(context.Context) (http.Handler, error) { return nil, errors.New("broken catalog") })
			rec, _ := serve(h, fx.secret, 5*time.Second)
			if rec.Code != http.StatusInternalServerError || rec.Header().Get("X-Request-Id") == "" {
				t.Fatalf("status %d X-Request-Id %q, want 500 with a request id from the failed start", rec.Code, rec.Header().Get("X-Request-Id"))
			}
			if got := rec.Header().Get("Access-Control-Allow-Origin"); got != tc.want {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, tc.want)
			}
		})
	}
}

// Issue 34 item 10: a function answers a path not in canonical form (//…, a . or .. segment) with
// a 404 in its envelope, before its endpoint is built — never a ServeMux redirect to the cleaned
// path (for ../ segments, a Location outside the API).
func TestANonCanonicalPathIsA404InTheEnvelope(t *testing.T) {
	built := false
	h := (&cloud.Cloud{}).HTTP(openaiapi.Render, func(context.Context) (http.Handler, error) {
		built = true
		return http.NotFoundHandler(), nil
	})
	for _, path := range []string{"//v1/chat/completions", "/console/assets/../../../etc/passwd", "/v1/./models", "/console/assets/%2e%2e"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		var body struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != http.StatusNotFound || rec.Header().Get("Location") != "" || body.Error.Code != "not_found" || rec.Header().Get("X-Request-Id") == "" {
			t.Errorf("GET %s: %d Location %q %s; want a 404 in the OpenAI envelope with a request id", path, rec.Code, rec.Header().Get("Location"), rec.Body)
		}
	}
	if built {
		t.Error("the endpoint was built for a path it does not serve")
	}
}
