package gateway_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/httpapi"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/localserver/localservertest"
	"github.com/secureai-gateway/gateway/internal/openaifake"
	"github.com/secureai-gateway/gateway/internal/openapitest"
	"github.com/tidwall/gjson"
)

// upstreamCall is one request the fake provider received, as it arrived.
type upstreamCall struct {
	provider string
	body     []byte
	header   http.Header
}

// recordingUpstream records what reaches the fake provider before the fake answers it.
type recordingUpstream struct {
	fake  *openaifake.Server
	mu    sync.Mutex
	calls []upstreamCall
}

func (u *recordingUpstream) handler(provider string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.calls = append(u.calls, upstreamCall{provider: provider, body: body, header: r.Header.Clone()})
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		u.fake.ServeHTTP(w, r)
	})
}

func (u *recordingUpstream) recorded() []upstreamCall {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]upstreamCall(nil), u.calls...)
}

// localGateway is the gateway `make run` serves — localserver.Deps on the embedded store — in front
// of fake providers: "fake" opts in to entitlement tokens, "other" does not. Models cost points:
// fake/error-500 5, everything else 1.
type localGateway struct {
	url    string
	admin  string // the bootstrap admin key's secret
	up     *recordingUpstream
	routes []string // every route it serves
}

func newLocalGateway(t testing.TB, policies string) *localGateway {
	t.Helper()
	return startLocalGateway(t, policies, func(h http.Handler) http.Handler { return openapitest.Handler(t, h) })
}

// startLocalGateway is newLocalGateway with its mux wrapped by wrap (nil: served as is, as a
// benchmark needs it: validating every exchange against the OpenAPI document costs ~100× a request).
func startLocalGateway(t testing.TB, policies string, wrap func(http.Handler) http.Handler) *localGateway {
	t.Helper()
	up := &recordingUpstream{fake: openaifake.New(300 * time.Millisecond)}
	fakeSrv, otherSrv := httptest.NewServer(up.handler("fake")), httptest.NewServer(up.handler("other"))
	t.Cleanup(fakeSrv.Close)
	t.Cleanup(otherSrv.Close)
	cat := &catalog.Catalog{
		Providers: map[string]catalog.ProviderConfig{
			"fake":  {Type: "openai", BaseURL: fakeSrv.URL + "/v1", ReceiveEntitlement: true},
			"other": {Type: "openai", BaseURL: otherSrv.URL + "/v1"},
		},
		Models: map[string]*catalog.Model{},
	}
	if policies != "" {
		cat.SMLTPPolicies = json.RawMessage(policies)
	}
	for _, p := range []string{"fake", "other"} {
		for _, m := range openaifake.Models {
			points := 1
			if m == "error-500" {
				points = 5
			}
			cat.Models[p+"/"+m] = &catalog.Model{Name: p + "/" + m, Provider: p, Upstream: m, Regions: []string{"us-east-1"}, Points: points}
		}
	}
	srv := localservertest.Serve(t, cat, localservertest.Env(), wrap)
	return &localGateway{url: srv.URL, admin: srv.Admin, up: up, routes: srv.Routes}
}

// call sends body to path with the key and returns the status, headers and parsed body.
func (g *localGateway) call(t testing.TB, method, path, key, body string) (int, http.Header, gjson.Result) {
	t.Helper()
	req, _ := http.NewRequest(method, g.url+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, gjson.ParseBytes(b)
}

// newKey creates a key through the admin API and returns its secret.
func (g *localGateway) newKey(t testing.TB, fields string) string {
	t.Helper()
	status, _, body := g.call(t, "POST", "/admin/api-keys", g.admin, fields)
	if status != http.StatusCreated || body.Get("secret").String() == "" {
		t.Fatalf("creating a key: %d %s", status, body.Raw)
	}
	return body.Get("secret").String()
}

func chatBody(chain string) string {
	return `{` + chain + `,"messages":[{"role":"user","content":"hi"}]}`
}

// A failover made through the local server reaches a subscriber's URL as a signed delivery;
// both signatures are checked as the contract describes them, not with the sender's code.
func TestAFailoverReachesASignedWebhook(t *testing.T) {
	g := newLocalGateway(t, "")
	type delivery struct {
		header http.Header
		body   []byte
	}
	got := make(chan delivery, 8)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Clone(), b}
	}))
	defer receiver.Close()

	status, _, hook := g.call(t, "POST", "/admin/webhooks", g.admin, `{"url":"`+receiver.URL+`/hook","events":["api:model_failover"]}`)
	secret := hook.Get("webhook.secret").String()
	if status != http.StatusCreated && status != http.StatusOK || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("creating the webhook: %d %s", status, hook.Raw)
	}
	if status, _, body := g.call(t, "POST", "/v1/chat/completions", g.admin, chatBody(`"model":"fake/error-500","fallback_models":["fake/ok"]`)); status != 200 {
		t.Fatalf("chat: %d %s", status, body.Raw)
	}
	var d delivery
	select {
	case d = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery reached the receiver")
	}
	ev := gjson.ParseBytes(d.body)
	if ev.Get("type").String() != "api:model_failover" || !strings.HasPrefix(ev.Get("id").String(), "evt_") ||
		ev.Get("data.failedModel").String() != "fake/error-500" || ev.Get("data.nextModel").String() != "fake/ok" ||
		ev.Get("data.reason").String() != "server_error" || d.header.Get("X-SecureAI-Event") != "api:model_failover" {
		t.Errorf("delivery %s with headers %v", d.body, d.header)
	}
	// X-SecureAI-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>, keyed by the
	// whsec_ string's bytes.
	var ts, v1 string
	for _, part := range strings.Split(d.header.Get("X-SecureAI-Signature"), ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			v1 = v
		}
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(d.body)))
	if v1 == "" || v1 != hex.EncodeToString(mac.Sum(nil)) {
		t.Errorf("X-SecureAI-Signature %q does not verify", d.header.Get("X-SecureAI-Signature"))
	}
	if sec, err := strconv.ParseInt(ts, 10, 64); err != nil || time.Since(time.Unix(sec, 0)) > time.Minute {
		t.Errorf("signature timestamp %q", ts)
	}
	// Standard Webhooks: v1,<base64 HMAC-SHA256(base64-decoded secret, "id.timestamp.body")>.
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatalf("whsec_ secret is not base64: %v", err)
	}
	mac = hmac.New(sha256.New, key)
	mac.Write([]byte(d.header.Get("webhook-id") + "." + d.header.Get("webhook-timestamp") + "." + string(d.body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if !strings.Contains(" "+d.header.Get("webhook-signature")+" ", " "+want+" ") || d.header.Get("webhook-id") != d.header.Get("X-SecureAI-Delivery") {
		t.Errorf("Standard Webhooks headers id %q ts %q sig %q do not verify", d.header.Get("webhook-id"), d.header.Get("webhook-timestamp"), d.header.Get("webhook-signature"))
	}
}

// The local server gives each key its read budget on /v1/models and the other reading routes,
// apart from its chat limits (issue 21 item 14).
func TestTheReadRoutesHaveAPerKeyBudget(t *testing.T) {
	g := newLocalGateway(t, "")
	key := g.newKey(t, `{"name":"reader","userId":"reader"}`)
	if now := time.Now(); now.Second() >= 55 { // the reads must share one calendar minute
		time.Sleep(now.Truncate(time.Minute).Add(time.Minute).Sub(now))
	}
	refused := 0
	for range httpapi.DefaultReadBudget + 1 {
		if status, _, _ := g.call(t, "GET", "/v1/models", key, ""); status == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d of %d reads refused, want the one past the budget", refused, httpapi.DefaultReadBudget+1)
	}
	if status, _, body := g.call(t, "POST", "/v1/chat/completions", key, chatBody(`"model":"fake/ok"`)); status != 200 {
		t.Errorf("a chat request after the reads: %d %s, want 200 (the budgets are apart)", status, body.Raw)
	}
}

func TestTheBootstrapAdminKeyHasNoLimits(t *testing.T) {
	g := newLocalGateway(t, "")
	// Past the default 60 a minute and 100 a day (SPEC 7: the bootstrap admin key has no limits).
	calls := int(apikey.DefaultLimits.PerDay) + 1
	for i := range calls {
		if status, _, body := g.call(t, "POST", "/v1/chat/completions", g.admin, chatBody(`"model":"fake/ok"`)); status != 200 {
			t.Fatalf("call %d: %d %s, want 200", i+1, status, body.Raw)
		}
	}
	_, _, usage := g.call(t, "GET", "/usage", g.admin, "")
	for _, w := range []string{"daily", "monthly", "rate_limit.requests_per_minute", "rate_limit.requests_per_hour"} {
		got := usage.Get("api_key." + w)
		if !got.Get("limit").Exists() || got.Get("limit").Type != gjson.Null || got.Get("remaining").Type != gjson.Null || got.Get("used").Int() < 1 {
			t.Errorf("usage %s = %s, want limit and remaining null, and the calls counted", w, got.Raw)
		}
	}
}
