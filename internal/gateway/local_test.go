package gateway_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/tidwall/gjson"
)

// A failover made through the local server reaches a subscriber's URL as a signed delivery;
// both signatures are checked as the contract describes them, not with the sender's code.
func TestAFailoverReachesASignedWebhook(t *testing.T) {
	g := gatewaykit.ServeFakes(t, "")
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

	status, _, hook := g.Call(t, "POST", "/admin/webhooks", g.Admin, `{"url":"`+receiver.URL+`/hook","events":["api:model_failover"]}`)
	secret := hook.Get("webhook.secret").String()
	if status != http.StatusCreated && status != http.StatusOK || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("creating the webhook: %d %s", status, hook.Raw)
	}
	if status, _, body := g.Call(t, "POST", "/v1/chat/completions", g.Admin, gatewaykit.ChatBody(`"model":"fake/error-500","fallback_models":["fake/ok"]`)); status != 200 {
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
	// Unvalidated: 301 reads through the OpenAPI validator took longer than a minute's margin on a
	// busy machine (the other tests validate these routes' answers).
	g := gatewaykit.ServeFakes(t, "", gatewaykit.Unvalidated())
	// The reads must share one calendar minute: a run that crossed into the next (its budget
	// renewed) is run again with a fresh key.
	for try := 1; ; try++ {
		key := g.NewKey(t, fmt.Sprintf(`{"name":"reader-%d","userId":"reader"}`, try))
		minute := time.Now().Truncate(time.Minute)
		refused := 0
		for range httpapi.DefaultReadBudget + 1 {
			if status, _, _ := g.Call(t, "GET", "/v1/models", key, ""); status == http.StatusTooManyRequests {
				refused++
			}
		}
		if !time.Now().Truncate(time.Minute).Equal(minute) && try < 3 {
			continue
		}
		if refused != 1 {
			t.Errorf("%d of %d reads refused, want the one past the budget", refused, httpapi.DefaultReadBudget+1)
		}
		if status, _, body := g.Call(t, "POST", "/v1/chat/completions", key, gatewaykit.ChatBody(`"model":"fake/ok"`)); status != 200 {
			t.Errorf("a chat request after the reads: %d %s, want 200 (the budgets are apart)", status, body.Raw)
		}
		return
	}
}

func TestTheBootstrapAdminKeyHasNoLimits(t *testing.T) {
	g := gatewaykit.ServeFakes(t, "")
	// Past the default 60 a minute and 100 a day (SPEC 7: the bootstrap admin key has no limits).
	calls := int(apikey.DefaultLimits.PerDay) + 1
	for i := range calls {
		if status, _, body := g.Call(t, "POST", "/v1/chat/completions", g.Admin, gatewaykit.ChatBody(`"model":"fake/ok"`)); status != 200 {
			t.Fatalf("call %d: %d %s, want 200", i+1, status, body.Raw)
		}
	}
	_, _, usage := g.Call(t, "GET", "/usage", g.Admin, "")
	for _, w := range []string{"daily", "monthly", "rate_limit.requests_per_minute", "rate_limit.requests_per_hour"} {
		got := usage.Get("api_key." + w)
		if !got.Get("limit").Exists() || got.Get("limit").Type != gjson.Null || got.Get("remaining").Type != gjson.Null || got.Get("used").Int() < 1 {
			t.Errorf("usage %s = %s, want limit and remaining null, and the calls counted", w, got.Raw)
		}
	}
}

// Issue 34 item 13: make run's admin key has no limits, and its user no quota: a newcomer's calls
// are not refused with a 402 after the default 1 000 points, and /usage shows no limit.
func TestTheBootstrapKeyIsNeverOutOfPoints(t *testing.T) {
	cat, up := gatewaykit.Fakes(t, "")
	cat.Models["fake/ok"].Points = 600 // two calls pass the default 1 000 points a month
	g := gatewaykit.Serve(t, cat, gatewaykit.Env(), gatewaykit.WithUpstream(up))
	for i := range 2 {
		if status, _, body := g.Call(t, "POST", "/v1/chat/completions", g.Admin, gatewaykit.ChatBody(`"model":"fake/ok"`)); status != 200 {
			t.Fatalf("call %d: %d %s", i+1, status, body.Raw)
		}
	}
	status, _, usage := g.Call(t, "GET", "/usage", g.Admin, "")
	if status != 200 || usage.Get("points.monthly_limit").Type != gjson.Null || usage.Get("points.remaining").Type != gjson.Null ||
		usage.Get("points.used").Int() != 1200 {
		t.Errorf("usage %d %s, want no limit (null) and the 1200 points used", status, usage.Raw)
	}
	// A key an admin makes for another user still gets the default quota.
	other := g.NewKey(t, `{"name":"app","userId":"team"}`)
	if _, _, usage := g.Call(t, "GET", "/usage", other, ""); usage.Get("points.monthly_limit").Int() != 1000 {
		t.Errorf("another user's usage %s, want the default 1000 points", usage.Raw)
	}
}

// Issue 34 item 11: an action taken in the console is audited as the console's, naming the
// operator whose key opened the session — not only the session's own key id.
func TestAConsoleActionsAuditEntryNamesTheConsoleAndTheOperator(t *testing.T) {
	g := gatewaykit.ServeFakes(t, "")
	_, _, keys := g.Call(t, "GET", "/admin/api-keys", g.Admin, "")
	operator := keys.Get("apiKeys.0.id").String()
	post := func(path, body string, cookie *http.Cookie) *http.Response {
		req, _ := http.NewRequest("POST", g.URL+path, strings.NewReader(body))
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		if cookie != nil {
			req.AddCookie(cookie)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	res := post("/console/session", `{"key":"`+g.Admin+`"}`, nil)
	if res.StatusCode != 200 || len(res.Cookies()) == 0 {
		t.Fatalf("sign-in: %d", res.StatusCode)
	}
	if res := post("/console/api/admin/api-keys", `{"name":"made in the console"}`, res.Cookies()[0]); res.StatusCode != 201 {
		t.Fatalf("creating a key through the console: %d", res.StatusCode)
	}
	var entry gjson.Result
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !entry.Exists(); time.Sleep(50 * time.Millisecond) {
		_, _, logs := g.Call(t, "GET", "/admin/audit-logs?type=admin:api_key_created", g.Admin, "")
		for _, e := range logs.Get("logs").Array() {
			if strings.Contains(e.Get("metadata.data").Raw, "made in the console") {
				entry = e
			}
		}
	}
	if !entry.Exists() {
		t.Fatal("no audit entry for the key made in the console")
	}
	if entry.Get("metadata.via").String() != "console" || entry.Get("metadata.operatorKeyId").String() != operator ||
		!strings.Contains(entry.Get("description").String(), "console") || !strings.Contains(entry.Get("description").String(), operator) {
		t.Errorf("audit entry %s: want it to name the console and the operator's key %s", entry.Raw, operator)
	}
}
