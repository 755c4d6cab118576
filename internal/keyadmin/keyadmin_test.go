package keyadmin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/accountapi"
	"github.com/secureai-gateway/gateway/internal/api/adminapi"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
	"github.com/secureai-gateway/gateway/internal/store/keycache"
)

var now = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// env is one admin API over a fresh embedded store, with the audit trail it emitted.
type env struct {
	store   *boltstore.Store
	svc     *keyadmin.Service
	h       http.Handler
	limits  *limits.Limiter
	cache   *keycache.Cache
	mu      sync.Mutex
	audited []keyadmin.AdminChange
	admin   *apikey.Key
}

func newEnv(t *testing.T) *env {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "gateway.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cat := catalog.Builtin()
	e := &env{store: s, cache: keycache.New(s, time.Hour, func() time.Time { return now })}
	e.svc = &keyadmin.Service{
		Keys: s, Users: s,
		ModelExists: func(m string) bool { _, ok := cat.Models[m]; return ok },
		Audit: func(_ context.Context, c keyadmin.AdminChange) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.audited = append(e.audited, c)
		},
		Invalidate: e.cache.Invalidate,
		Now:        func() time.Time { return now },
	}
	// The admin API as the gateway mounts it: the route table, each admin route behind the
	// authentication (here: a key in the context or 401) and the admin check.
	e.limits = &limits.Limiter{Counter: limits.NewMemory()}
	keys := &adminapi.Keys{Service: e.svc, Limits: e.limits, KeyCacheTTL: 30 * time.Second, Now: func() time.Time { return now }}
	usage := &accountapi.Usage{Limits: e.limits, Billing: &billing.Biller{Store: s, Now: func() time.Time { return now }}, Now: func() time.Time { return now }}
	admin := httpapi.Behind(fail, func(h http.HandlerFunc) http.Handler { return authenticated(httpapi.RequireAdmin(fail, h)) }, keys.Routes())
	e.h = httpapi.Table(fail, append(admin, httpapi.Behind(fail, func(h http.HandlerFunc) http.Handler { return authenticated(h) }, usage.Routes())...)...)
	e.admin = &apikey.Key{ID: "key_admin", Name: "ops", Admin: true}
	return e
}

// authenticated stands in for httpapi.Authenticate: a request without a key gets its 401.
func authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if identity.Key(r.Context()) == nil {
			fail(w, r, fault.New(fault.Unauthenticated, "Invalid API key", "An API key is required"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fail renders errors as the lead's surface does, by kind, in the classic envelope.
func fail(w http.ResponseWriter, _ *http.Request, err error) {
	status := map[fault.Kind]int{fault.InvalidRequest: 400, fault.Unauthenticated: 401, fault.Forbidden: 403,
		fault.NotFound: 404, fault.MethodNotAllowed: 405, fault.Conflict: 409, fault.TooLarge: 413}[fault.KindOf(err)]
	if status == 0 {
		status = 500
	}
	var fe *fault.Error
	body := map[string]any{"success": false, "error": "Internal error", "message": err.Error()}
	if errors.As(err, &fe) {
		body["error"], body["message"], body["param"] = fe.Title, fe.Message, fe.Param
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// do sends a request as caller (nil: anonymous) and decodes the JSON answer.
func (e *env) do(t *testing.T, caller *apikey.Key, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	r := httptest.NewRequest(method, path, rd)
	if caller != nil {
		r = r.WithContext(identity.WithKey(r.Context(), caller))
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	var out map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: %d %q is not JSON", method, path, w.Code, w.Body)
	}
	return w.Code, out
}

func (e *env) create(t *testing.T, body any) (id, secret string, key map[string]any) {
	t.Helper()
	code, out := e.do(t, e.admin, "POST", "/admin/api-keys", body)
	if code != 201 {
		t.Fatalf("create: %d %v", code, out)
	}
	key = out["apiKey"].(map[string]any)
	return key["id"].(string), out["secret"].(string), key
}

func TestCreateShowsTheSecretOnceAndStoresOnlyItsHash(t *testing.T) {
	e := newEnv(t)
	id, secret, key := e.create(t, map[string]any{"name": "app", "userId": "team-a"})
	if !regexp.MustCompile(`^sk-[0-9a-f]{64}$`).MatchString(secret) {
		t.Fatalf("secret %q is not sk- + 64 hex", secret)
	}
	sum := sha256.Sum256([]byte(secret))
	stored, err := e.store.KeyByHash(context.Background(), hex.EncodeToString(sum[:]))
	if err != nil || stored.ID != id {
		t.Fatalf("the key is not stored under the secret's SHA-256: %v", err)
	}
	if key["billingMode"] != "user-completions" || key["dailyLimit"] != 100.0 || key["monthlyLimit"] != 10000.0 ||
		key["rateLimit"].(map[string]any)["requestsPerMinute"] != 60.0 || key["rateLimit"].(map[string]any)["requestsPerHour"] != 1000.0 {
		t.Errorf("defaults not shown: %v", key)
	}
	if p := key["allowedSMLTPPolicies"].([]any); len(p) != 2 || p[0] != "public" || p[1] != "internal" {
		t.Errorf("allowedSMLTPPolicies = %v, want the default [public internal]", p)
	}
	for _, path := range []string{"/admin/api-keys/" + id, "/admin/api-keys"} {
		_, out := e.do(t, e.admin, "GET", path, nil)
		raw, _ := json.Marshal(out)
		if strings.Contains(string(raw), secret[3:]) || strings.Contains(string(raw), stored.Hash) {
			t.Errorf("GET %s shows the secret or its hash: %s", path, raw)
		}
	}
	u, err := e.store.User(context.Background(), "team-a")
	if err != nil || u.MonthlyPoints != billing.DefaultUser.MonthlyPoints {
		t.Errorf("the unknown user was not created with the defaults: %+v, %v", u, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	raw, _ := json.Marshal(e.audited)
	if len(e.audited) != 2 || e.audited[0].Action != keyadmin.ActionUserCreate || e.audited[1].Action != keyadmin.ActionKeyCreate ||
		e.audited[1].Actor != "key_admin" || strings.Contains(string(raw), secret[3:]) || strings.Contains(string(raw), stored.Hash) {
		t.Errorf("audit trail %s: want user.create then api_key.create by key_admin, with no secret or hash", raw)
	}
}

func TestEveryFieldIsValidatedNamingTheField(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		body  string
		param string
	}{
		{"name missing", `{}`, "name"},
		{"name empty", `{"name":""}`, "name"},
		{"billingMode unknown", `{"name":"a","billingMode":"free"}`, "billingMode"},
		{"dailyLimit zero", `{"name":"a","dailyLimit":0}`, "dailyLimit"},
		{"monthlyLimit negative", `{"name":"a","monthlyLimit":-5}`, "monthlyLimit"},
		{"requestsPerMinute over 1000", `{"name":"a","rateLimit":{"requestsPerMinute":1001}}`, "rateLimit.requestsPerMinute"},
		{"requestsPerHour over 10000", `{"name":"a","rateLimit":{"requestsPerHour":10001}}`, "rateLimit.requestsPerHour"},
		{"expiresAt in the past", `{"name":"a","expiresAt":"2020-01-01T00:00:00Z"}`, "expiresAt"},
		// Issue 34 item 10: year 10000 in UTC cannot be stored or shown as RFC 3339.
		{"expiresAt past year 9999 in UTC", `{"name":"a","expiresAt":"9999-12-31T23:59:59-01:00"}`, "expiresAt"},
		{"allowedModels unknown", `{"name":"a","allowedModels":["openai/gpt-5-nano","acme/nope"]}`, "allowedModels[1]"},
		// SPEC 7: an empty list is refused (null allows every model, or the default policies).
		{"allowedModels empty", `{"name":"a","allowedModels":[]}`, "allowedModels"},
		// Issue 21 item 13: names read as they are; no path-like user ids.
		{"name with a control character", "{\"name\":\"a\\u0000b\"}", "name"},
		{"name with a bidi override", "{\"name\":\"invoice\\u202egpj.exe\"}", "name"},
		{"userId ..", `{"name":"a","userId":".."}`, "userId"},
		{"allowedSMLTPPolicies empty", `{"name":"a","allowedSMLTPPolicies":[]}`, "allowedSMLTPPolicies"},
		{"allowedSMLTPPolicies empty name", `{"name":"a","allowedSMLTPPolicies":[""]}`, "allowedSMLTPPolicies[0]"},
		{"userId with spaces", `{"name":"a","userId":"a b"}`, "userId"},
		{"failoverDefaults four models", `{"name":"a","failoverDefaults":{"models":["openai/gpt-5","openai/gpt-5-mini","openai/gpt-5-nano","openai/gpt-4.1"]}}`, "failoverDefaults.models"},
		{"failoverDefaults unknown model", `{"name":"a","failoverDefaults":{"models":["openai/gpt-5","acme/nope"]}}`, "failoverDefaults.models[1]"},
		{"failoverDefaults unknown trigger", `{"name":"a","failoverDefaults":{"models":["openai/gpt-5"],"on":["sunspots"]}}`, "failoverDefaults.on"},
		{"failoverDefaults model not allowed", `{"name":"a","allowedModels":["openai/gpt-5"],"failoverDefaults":{"models":["openai/gpt-5","openai/gpt-5-nano"]}}`, "failoverDefaults.models[1]"},
		{"wrong type", `{"name":"a","dailyLimit":"ten"}`, "dailyLimit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := e.do(t, e.admin, "POST", "/admin/api-keys", tc.body)
			if code != 400 || !strings.HasPrefix(out["param"].(string), tc.param) {
				t.Errorf("%d %v, want 400 naming %s", code, out, tc.param)
			}
		})
	}
	for _, body := range []string{`{"name":"a","unknown":1}`, `{"name":"a","failoverDefaults":{"models":["openai/gpt-5"],"extra":1}}`, `{"name":"a"} {}`, ``} {
		if code, out := e.do(t, e.admin, "POST", "/admin/api-keys", body); code != 400 {
			t.Errorf("body %q: %d %v, want 400", body, code, out)
		}
	}
	if n, _ := e.store.CountKeys(context.Background()); n != 0 {
		t.Errorf("%d keys were created by refused requests", n)
	}
}

func TestFailoverDefaultsAreClampedAndShownAsStored(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name           string
		in             map[string]any
		timeout, first float64
	}{
		{"below the ranges", map[string]any{"timeout_ms": 10, "first_token_timeout_ms": 1}, 1000, 500},
		{"above the ranges", map[string]any{"timeout_ms": 9_999_999, "first_token_timeout_ms": 999_999}, 300000, 60000},
		{"inside the ranges", map[string]any{"timeout_ms": 20000, "first_token_timeout_ms": 4000}, 20000, 4000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd := map[string]any{"models": []string{"openai/gpt-5-nano", "anthropic/claude-sonnet-4", "openai/gpt-5-nano"}, "on": []string{"timeout"}}
			for k, v := range tc.in {
				fd[k] = v
			}
			id, _, key := e.create(t, map[string]any{"name": "a", "failoverDefaults": fd})
			got := key["failoverDefaults"].(map[string]any)
			if got["timeout_ms"] != tc.timeout || got["first_token_timeout_ms"] != tc.first || len(got["models"].([]any)) != 2 {
				t.Errorf("response shows %v", got)
			}
			k, err := e.svc.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if float64(k.FailoverDefaults.TimeoutMS) != tc.timeout || float64(k.FailoverDefaults.FirstTokenTimeoutMS) != tc.first {
				t.Errorf("stored %+v", k.FailoverDefaults)
			}
		})
	}
}

func TestUpdateIsPartialAndSaysWhenItPropagates(t *testing.T) {
	e := newEnv(t)
	id, _, _ := e.create(t, map[string]any{"name": "a", "expiresAt": now.Add(time.Hour), "dailyLimit": 7,
		"failoverDefaults": map[string]any{"models": []string{"openai/gpt-5-nano"}}})
	code, out := e.do(t, e.admin, "PATCH", "/admin/api-keys/"+id, `{"rateLimit":{"requestsPerMinute":5},"expiresAt":null,"failoverDefaults":null}`)
	if code != 200 {
		t.Fatalf("%d %v", code, out)
	}
	k := out["apiKey"].(map[string]any)
	rl := k["rateLimit"].(map[string]any)
	if rl["requestsPerMinute"] != 5.0 || rl["requestsPerHour"] != 1000.0 || k["dailyLimit"] != 7.0 || k["name"] != "a" {
		t.Errorf("unchanged fields changed or the change is missing: %v", k)
	}
	if _, ok := k["expiresAt"]; ok {
		t.Errorf("expiresAt not cleared: %v", k)
	}
	if _, ok := k["failoverDefaults"]; ok {
		t.Errorf("failoverDefaults not cleared: %v", k)
	}
	p := out["propagation"].(map[string]any)
	if p["local"] != "immediate" || p["cloudMaxSeconds"] != 30.0 {
		t.Errorf("propagation %v", p)
	}
	if code, _ := e.do(t, e.admin, "PUT", "/admin/api-keys/key_missing", `{"name":"x"}`); code != 404 {
		t.Errorf("update of an unknown key: %d, want 404", code)
	}
	// Issue 34 item 10: a time past year 9999 in UTC is a 400 naming expiresAt, not a 500 from
	// storing or showing it.
	if code, out := e.do(t, e.admin, "PATCH", "/admin/api-keys/"+id, `{"expiresAt":"9999-12-31T23:59:59-01:00"}`); code != 400 || out["param"] != "expiresAt" {
		t.Errorf("expiresAt in year 10000 UTC: %d %v, want 400 naming expiresAt", code, out)
	}
}

func TestANullLimitIsNoLimit(t *testing.T) {
	e := newEnv(t)
	id, secret, key := e.create(t, map[string]any{"name": "service", "dailyLimit": nil, "rateLimit": map[string]any{"requestsPerMinute": nil}})
	rl := key["rateLimit"].(map[string]any)
	if v, ok := key["dailyLimit"]; !ok || v != nil || rl["requestsPerMinute"] != nil || rl["requestsPerHour"] != 1000.0 || key["monthlyLimit"] != 10000.0 {
		t.Errorf("created %v, want dailyLimit and requestsPerMinute null, the other limits their defaults", key)
	}
	code, out := e.do(t, e.admin, "PATCH", "/admin/api-keys/"+id, `{"rateLimit":null,"monthlyLimit":null}`)
	if code != 200 {
		t.Fatalf("%d %v", code, out)
	}
	k, err := e.store.KeyByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if l := k.Limits(); l != (apikey.Limits{PerMinute: apikey.NoLimit, PerHour: apikey.NoLimit, PerDay: apikey.NoLimit, PerMonth: apikey.NoLimit}) {
		t.Errorf("stored limits %+v, want none", l)
	}
	// A number sets a limit again, within SPEC 7's maximum.
	if code, out := e.do(t, e.admin, "PATCH", "/admin/api-keys/"+id, `{"rateLimit":{"requestsPerMinute":1001}}`); code != 400 || out["param"] != "rateLimit.requestsPerMinute" {
		t.Errorf("1001 a minute: %d %v, want a 400 naming rateLimit.requestsPerMinute", code, out)
	}
	if code, out := e.do(t, e.admin, "PATCH", "/admin/api-keys/"+id, `{"dailyLimit":3}`); code != 200 || out["apiKey"].(map[string]any)["dailyLimit"] != 3.0 {
		t.Errorf("dailyLimit 3: %d %v", code, out)
	}
	hash, _ := apikey.Hash(secret)
	k, _ = e.store.KeyByHash(context.Background(), hash)
	code, usage := e.do(t, k, "GET", "/usage", nil)
	a := usage["api_key"].(map[string]any)
	minute := a["rate_limit"].(map[string]any)["requests_per_minute"].(map[string]any)
	if code != 200 || minute["limit"] != nil || minute["remaining"] != nil || a["daily"].(map[string]any)["limit"] != 3.0 {
		t.Errorf("usage %d %v, want the minute's limit and remaining null, the day's 3", code, a)
	}
}

func TestRevocationTakesEffectOnTheNextLocalRequest(t *testing.T) {
	e := newEnv(t)
	id, secret, _ := e.create(t, map[string]any{"name": "a"})
	hash, _ := apikey.Hash(secret)
	k, err := e.cache.KeyByHash(context.Background(), hash) // cached for an hour
	if err != nil || !k.Usable(now) {
		t.Fatalf("before revocation: %v", err)
	}
	code, out := e.do(t, e.admin, "DELETE", "/admin/api-keys/"+id, nil)
	if code != 200 || out["apiKey"].(map[string]any)["revokedAt"] == nil {
		t.Fatalf("revoke: %d %v", code, out)
	}
	if k, err := e.cache.KeyByHash(context.Background(), hash); err != nil || k.Usable(now) {
		t.Errorf("after revocation the cache still serves a usable key (%v)", err)
	}
	e.do(t, e.admin, "DELETE", "/admin/api-keys/"+id, nil)
	e.mu.Lock()
	defer e.mu.Unlock()
	revokes := 0
	for _, c := range e.audited {
		if c.Action == keyadmin.ActionKeyRevoke {
			revokes++
		}
	}
	if revokes != 1 {
		t.Errorf("%d revoke audit records for a key revoked twice, want 1", revokes)
	}
}

func TestAdminRoutesRefuseNormalKeysAndAnonymousCalls(t *testing.T) {
	e := newEnv(t)
	normal := &apikey.Key{ID: "key_app", Name: "app"}
	for _, route := range [][2]string{{"POST", "/admin/api-keys"}, {"GET", "/admin/api-keys"}, {"GET", "/admin/api-keys/x"},
		{"PATCH", "/admin/api-keys/x"}, {"DELETE", "/admin/api-keys/x"}, {"GET", "/admin/users/x"}, {"PUT", "/admin/users/x"}} {
		if code, out := e.do(t, normal, route[0], route[1], `{}`); code != 403 || out["error"] != "Access denied" {
			t.Errorf("%s %s with a normal key: %d %v, want 403 Access denied", route[0], route[1], code, out)
		}
		if code, _ := e.do(t, nil, route[0], route[1], `{}`); code != 401 {
			t.Errorf("%s %s anonymous: %d, want 401", route[0], route[1], code)
		}
	}
	if code, _ := e.do(t, e.admin, "POST", "/admin/api-keys/x", `{}`); code != 405 {
		t.Errorf("POST on a key: %d, want 405", code)
	}
}

func TestListPagesThroughEveryKeyOnce(t *testing.T) {
	e := newEnv(t)
	want := map[string]bool{}
	for i := range 5 {
		e.svc.Now = func() time.Time { return now.Add(time.Duration(i) * time.Second) }
		id, _, _ := e.create(t, map[string]any{"name": "k"})
		want[id] = true
	}
	seen, cursor, pages := map[string]bool{}, "", 0
	for {
		code, out := e.do(t, e.admin, "GET", "/admin/api-keys?limit=2&cursor="+cursor, nil)
		if code != 200 {
			t.Fatalf("%d %v", code, out)
		}
		pages++
		for _, k := range out["apiKeys"].([]any) {
			id := k.(map[string]any)["id"].(string)
			if seen[id] {
				t.Errorf("key %s listed twice", id)
			}
			seen[id] = true
		}
		next, _ := out["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if pages != 3 || len(seen) != len(want) {
		t.Errorf("%d pages, %d keys; want 3 pages, %d keys", pages, len(seen), len(want))
	}
	for _, q := range []string{"cursor=garbage", "limit=0", "limit=201", "limit=x"} {
		if code, _ := e.do(t, e.admin, "GET", "/admin/api-keys?"+q, nil); code != 400 {
			t.Errorf("?%s: %d, want 400", q, code)
		}
	}
}

func TestListSearchesByNameAndUser(t *testing.T) {
	e := newEnv(t)
	for i, k := range []map[string]any{{"name": "Search Me"}, {"name": "other"}, {"name": "search me too", "userId": "team-s"}} {
		e.svc.Now = func() time.Time { return now.Add(time.Duration(i) * time.Second) }
		e.create(t, k)
	}
	names := func(query string) []string {
		t.Helper()
		code, out := e.do(t, e.admin, "GET", "/admin/api-keys?"+query, nil)
		if code != 200 {
			t.Fatalf("?%s: %d %v", query, code, out)
		}
		var got []string
		for _, k := range out["apiKeys"].([]any) {
			got = append(got, k.(map[string]any)["name"].(string))
		}
		return got
	}
	if got := names("name=SEARCH%20me"); !slices.Equal(got, []string{"Search Me", "search me too"}) {
		t.Errorf("?name=SEARCH me lists %q", got)
	}
	if got := names("name=search&userId=team-s"); !slices.Equal(got, []string{"search me too"}) {
		t.Errorf("?name=search&userId=team-s lists %q", got)
	}
	if code, out := e.do(t, e.admin, "GET", "/admin/api-keys?name="+strings.Repeat("x", 257), nil); code != 400 || out["param"] != "name" {
		t.Errorf("a 257-byte name: %d %v, want 400 naming name", code, out)
	}
}

func TestUsersBillingRecord(t *testing.T) {
	e := newEnv(t)
	if code, _ := e.do(t, e.admin, "GET", "/admin/users/team-b", nil); code != 404 {
		t.Errorf("GET unknown user: %d, want 404", code)
	}
	code, out := e.do(t, e.admin, "PUT", "/admin/users/team-b", `{"monthlyPoints":500,"renewalDay":1,"usageByModel":{"enabled":true,"dollarLimit":25}}`)
	if code != 200 {
		t.Fatalf("%d %v", code, out)
	}
	u := out["user"].(map[string]any)
	pts, ubm := u["points"].(map[string]any), u["usageByModel"].(map[string]any)
	if pts["monthlyAllowance"] != 500.0 || pts["renewalDay"] != 1.0 || pts["remaining"] != 500.0 || ubm["enabled"] != true || ubm["dollarLimit"] != 25.0 {
		t.Errorf("user %v", u)
	}
	if code, out := e.do(t, e.admin, "PATCH", "/admin/users/team-b", `{"renewalDay":31}`); code != 400 || out["param"] != "renewalDay" {
		t.Errorf("renewalDay 31: %d %v, want 400 naming renewalDay", code, out)
	}
	if th := u["budgetThresholds"]; !reflect.DeepEqual(th, []any{50.0, 80.0, 100.0}) {
		t.Errorf("a new user's budgetThresholds %v, want the defaults [50 80 100]", th)
	}
	for body, want := range map[string][]any{`{"budgetThresholds":[90,25,90]}`: {25.0, 90.0}, `{"budgetThresholds":[]}`: {}, `{"monthlyPoints":600}`: {}} {
		code, out := e.do(t, e.admin, "PATCH", "/admin/users/team-b", body)
		if th := out["user"].(map[string]any)["budgetThresholds"]; code != 200 || !reflect.DeepEqual(th, want) {
			t.Errorf("PATCH %s: %d, budgetThresholds %v; want %v", body, code, th, want)
		}
	}
	for _, body := range []string{`{"budgetThresholds":[0]}`, `{"budgetThresholds":[101]}`, `{"budgetThresholds":[1,2,3,4,5,6,7,8,9,10,11]}`, `{"budgetThresholds":"50"}`} {
		if code, out := e.do(t, e.admin, "PUT", "/admin/users/team-b", body); code != 400 || out["param"] != "budgetThresholds" {
			t.Errorf("PUT %s: %d %v, want 400 naming budgetThresholds", body, code, out)
		}
	}
	// A null allowance lifts the quota (shown as null, as the bootstrap admin's user has it); a
	// number sets one again.
	code, out = e.do(t, e.admin, "PATCH", "/admin/users/team-b", `{"monthlyPoints":null}`)
	if pts, _ := out["user"].(map[string]any)["points"].(map[string]any); code != 200 || pts["monthlyAllowance"] != nil || pts["remaining"] != nil {
		t.Errorf("monthlyPoints null: %d %v, want no allowance and nothing remaining shown as null", code, out)
	}
	code, out = e.do(t, e.admin, "PATCH", "/admin/users/team-b", `{"monthlyPoints":20}`)
	if pts, _ := out["user"].(map[string]any)["points"].(map[string]any); code != 200 || pts["monthlyAllowance"] != 20.0 || pts["remaining"] != 20.0 {
		t.Errorf("monthlyPoints 20: %d %v", code, out)
	}
	if code, out := e.do(t, e.admin, "PATCH", "/admin/users/team-b", `{"monthlyPoints":-1}`); code != 400 || out["param"] != "monthlyPoints" {
		t.Errorf("monthlyPoints -1: %d %v, want 400 naming monthlyPoints", code, out)
	}
	// Issue 34 item 10: the path's id is decoded (%2E%2E is ..), and no user is named like a
	// path segment, as no key's userId may be.
	for _, id := range []string{"%2E%2E", "%2e", "a%20b"} {
		if code, out := e.do(t, e.admin, "PUT", "/admin/users/"+id, `{"monthlyPoints":5}`); code != 400 || out["param"] != "id" {
			t.Errorf("PUT /admin/users/%s: %d %v, want 400 naming id", id, code, out)
		}
	}
	for _, id := range []string{"..", ".", "a b"} {
		if _, err := e.store.User(context.Background(), id); !errors.Is(err, billing.ErrNotFound) {
			t.Errorf("user %q was created (%v)", id, err)
		}
	}
}

func TestUsageShowsTheCallersQuotaLimitsAndCounts(t *testing.T) {
	e := newEnv(t)
	id, _, _ := e.create(t, map[string]any{"name": "app", "userId": "team-c", "dailyLimit": 5})
	k, err := e.svc.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		counted := &ledger.Ledger{Store: ledger.Local{Counter: e.limits.Counter.(*limits.Memory)}, Limits: true}
		if _, err := counted.Admit(context.Background(), k, nil, billing.Estimate{}, now); err != nil {
			t.Fatal(err)
		}
	}
	code, out := e.do(t, k, "GET", "/usage", nil)
	if code != 200 {
		t.Fatalf("%d %v", code, out)
	}
	a := out["api_key"].(map[string]any)
	daily := a["daily"].(map[string]any)
	if daily["limit"] != 5.0 || daily["used"] != 2.0 || daily["remaining"] != 3.0 || daily["reset_time"] != "2026-12-02T00:00:00Z" {
		t.Errorf("daily %v", daily)
	}
	if a["rate_limit"].(map[string]any)["requests_per_minute"].(map[string]any)["used"] != 2.0 || a["billing_mode"] != "user-completions" {
		t.Errorf("api_key %v", a)
	}
	if pts := out["points"].(map[string]any); pts["remaining"] != 1000.0 || pts["monthly_limit"] != 1000.0 {
		t.Errorf("points %v", pts)
	}
	if _, ok := out["usage_by_model"].(map[string]any)["remaining_budget"]; !ok {
		t.Errorf("usage_by_model %v", out["usage_by_model"])
	}
	if code, _ := e.do(t, nil, "GET", "/usage", nil); code != 401 {
		t.Errorf("anonymous /usage: %d, want 401", code)
	}
}

// TestAdminSeesAnyKeysCountsAgainstItsLimits: GET /admin/api-keys/{id}/usage is what GET /usage
// tells the key itself — each window's count, limit, remainder and reset — for an admin.
func TestAdminSeesAnyKeysCountsAgainstItsLimits(t *testing.T) {
	e := newEnv(t)
	id, _, _ := e.create(t, map[string]any{"name": "app", "dailyLimit": 5, "rateLimit": map[string]any{"requestsPerMinute": nil}})
	k, err := e.svc.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	counted := &ledger.Ledger{Store: ledger.Local{Counter: e.limits.Counter.(*limits.Memory)}, Limits: true}
	for range 3 {
		if _, err := counted.Admit(context.Background(), k, nil, billing.Estimate{}, now); err != nil {
			t.Fatal(err)
		}
	}
	code, out := e.do(t, e.admin, "GET", "/admin/api-keys/"+id+"/usage", nil)
	if code != 200 {
		t.Fatalf("%d %v", code, out)
	}
	u := out["usage"].(map[string]any)
	daily := u["daily"].(map[string]any)
	if u["id"] != id || daily["limit"] != 5.0 || daily["used"] != 3.0 || daily["remaining"] != 2.0 || daily["reset_time"] != "2026-12-02T00:00:00Z" {
		t.Errorf("usage %v", u)
	}
	rpm := u["rate_limit"].(map[string]any)["requests_per_minute"].(map[string]any)
	if rpm["limit"] != nil || rpm["remaining"] != nil || rpm["used"] != 3.0 || rpm["reset_time"] != "2026-12-01T10:01:00Z" {
		t.Errorf("a lifted per-minute limit: %v, want limit and remaining null, 3 used", rpm)
	}
	if monthly := u["monthly"].(map[string]any); monthly["reset_time"] != "2027-01-01T00:00:00Z" {
		t.Errorf("monthly %v", monthly)
	}
	for _, tc := range []struct {
		caller *apikey.Key
		method string
		path   string
		want   int
	}{
		{e.admin, "GET", "/admin/api-keys/key_nope/usage", 404},
		{k, "GET", "/admin/api-keys/" + id + "/usage", 403},
		{e.admin, "POST", "/admin/api-keys/" + id + "/usage", 405},
	} {
		if code, out := e.do(t, tc.caller, tc.method, tc.path, nil); code != tc.want {
			t.Errorf("%s %s: %d %v, want %d", tc.method, tc.path, code, out, tc.want)
		}
	}
}

// TestAModelAloneGetsTheChainFromItsPositionInTheStoredDefaults: what the admin stored (clamped)
// is what a caller sending `model` alone runs.
func TestAModelAloneGetsTheChainFromItsPositionInTheStoredDefaults(t *testing.T) {
	e := newEnv(t)
	id, _, _ := e.create(t, map[string]any{"name": "a", "failoverDefaults": map[string]any{
		"models":     []string{"openai/gpt-5-nano", "anthropic/claude-sonnet-4", "google/gemini-2.5-flash"},
		"timeout_ms": 999_999, "on": []string{"timeout", "server_error"}}})
	k, err := e.svc.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := chain.ParseSpec([]byte(`{"model":"anthropic/claude-sonnet-4"}`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := chain.Resolve(spec, k.FailoverDefaults, chain.ProjectSettings)
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Models(); !slices.Equal(got, []string{"anthropic/claude-sonnet-4", "google/gemini-2.5-flash"}) || plan.Source != chain.FromKeyDefaults {
		t.Fatalf("chain %v from %s, want the defaults from claude-sonnet-4's position", got, plan.Source)
	}
	if plan.Targets[0].Timeout != 300*time.Second || plan.On.Has(chain.RateLimit) || !plan.On.Has(chain.Timeout) {
		t.Errorf("plan %+v, want the clamped 300 s timeout and the defaults' triggers", plan)
	}
}

// Setting a user who does not exist yet creates it as the patch makes it: one record, one audit
// entry with that record — not an implicit default user and then an update.
func TestSettingANewUserIsOneCreation(t *testing.T) {
	e := newEnv(t)
	status, _ := e.do(t, e.admin, "PUT", "/admin/users/team-z", map[string]any{"monthlyPoints": 500})
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.audited) != 1 || e.audited[0].Action != keyadmin.ActionUserCreate {
		t.Fatalf("audit trail %+v, want one user.create", e.audited)
	}
	if u, ok := e.audited[0].After.(*billing.User); !ok || u.MonthlyPoints != 500 {
		t.Errorf("created record %+v, want the patched one", e.audited[0].After)
	}
}

// Issue 21 item 13: a revoked key stays as it was revoked, and the last admin key cannot revoke
// or demote itself (nobody could administer the gateway after).
func TestRevokedKeysAndTheLastAdminAreKept(t *testing.T) {
	e := newEnv(t)
	id, _, _ := e.create(t, map[string]any{"name": "app"})
	if code, out := e.do(t, e.admin, "DELETE", "/admin/api-keys/"+id, nil); code != 200 {
		t.Fatalf("revoke: %d %v", code, out)
	}
	if code, out := e.do(t, e.admin, "PATCH", "/admin/api-keys/"+id, map[string]any{"name": "again"}); code != 409 {
		t.Errorf("editing a revoked key: %d %v, want 409", code, out)
	}
	admin, _, _ := e.create(t, map[string]any{"name": "ops", "admin": true})
	if code, out := e.do(t, e.admin, "PATCH", "/admin/api-keys/"+admin, map[string]any{"admin": false}); code != 409 {
		t.Errorf("demoting the last admin key: %d %v, want 409", code, out)
	}
	if code, out := e.do(t, e.admin, "DELETE", "/admin/api-keys/"+admin, nil); code != 409 {
		t.Errorf("revoking the last admin key: %d %v, want 409", code, out)
	}
	e.create(t, map[string]any{"name": "ops 2", "admin": true})
	if code, out := e.do(t, e.admin, "DELETE", "/admin/api-keys/"+admin, nil); code != 200 {
		t.Errorf("revoking an admin key while another remains: %d %v, want 200", code, out)
	}
}

// Issue 34 item 16: GET /admin/users lists every user by id, a page at a time, each as GET
// /admin/users/{id} shows it; a bad limit or cursor is a 400 naming it.
func TestUsersAreListedByID(t *testing.T) {
	e := newEnv(t)
	e.create(t, map[string]any{"name": "a", "userId": "team-b"})
	e.create(t, map[string]any{"name": "b", "userId": "team-a"})
	if code, out := e.do(t, e.admin, "PUT", "/admin/users/team-c", `{"monthlyPoints":null}`); code != 200 {
		t.Fatalf("PUT team-c: %d %v", code, out)
	}
	var ids []string
	cursor := ""
	for page := 0; ; page++ {
		code, out := e.do(t, e.admin, "GET", "/admin/users?limit=2&cursor="+cursor, nil)
		if code != 200 || page > 3 {
			t.Fatalf("page %d: %d %v", page, code, out)
		}
		for _, u := range out["users"].([]any) {
			u := u.(map[string]any)
			ids = append(ids, u["id"].(string))
			if u["id"] == "team-c" && u["points"].(map[string]any)["monthlyAllowance"] != nil {
				t.Errorf("team-c listed as %v, want no quota", u)
			}
		}
		next, _ := out["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if strings.Join(ids, ",") != "team-a,team-b,team-c" {
		t.Errorf("listed %v, want team-a,team-b,team-c", ids)
	}
	for _, q := range []string{"limit=0", "limit=201", "limit=x", "cursor=***"} {
		if code, out := e.do(t, e.admin, "GET", "/admin/users?"+q, nil); code != 400 {
			t.Errorf("GET /admin/users?%s: %d %v, want 400", q, code, out)
		}
	}
	if code, _ := e.do(t, &apikey.Key{ID: "key_normal"}, "GET", "/admin/users", nil); code != 403 {
		t.Errorf("a normal key listing users: %d, want 403", code)
	}
}
