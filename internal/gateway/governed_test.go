package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
	"github.com/secureai-gateway/gateway/verify"
	"github.com/tidwall/gjson"
)

// Every attempt carries its own Signed Entitlement Token, bound to that attempt's model and the
// exact bytes the provider received; only a provider that opted in receives it; the serving
// attempt's token id is the bundle id, and the signed receipt lists every attempt.
func TestEveryAttemptIsAGovernedCall(t *testing.T) {
	g := gatewaykit.ServeFakes(t, "")
	_, _, jwks := g.Call(t, "GET", "/.well-known/jwks.json", "", "")
	keys, err := verify.StaticJWKS([]byte(jwks.Raw))
	if err != nil {
		t.Fatalf("JWKS %s: %v", jwks.Raw, err)
	}
	for _, stream := range []bool{false, true} {
		before := len(g.Upstream.Calls())
		body := gatewaykit.ChatBody(`"models":["fake/error-500","other/error-429","fake/ok"]`)
		if stream {
			body = strings.Replace(body, `{`, `{"stream":true,`, 1)
		}
		req, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+g.Admin)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		first := string(raw)
		if stream {
			first = strings.TrimPrefix(strings.SplitN(first, "\n", 2)[0], "data: ")
		}
		bundle := gjson.Get(first, "secureai.smltp_bundle_id").String()
		if res.StatusCode != 200 || !strings.HasPrefix(bundle, "set_") {
			t.Fatalf("stream=%v: status %d, bundle id %q: %s", stream, res.StatusCode, bundle, raw)
		}
		calls := g.Upstream.Calls()[before:]
		if len(calls) != 3 {
			t.Fatalf("stream=%v: %d upstream calls, want 3", stream, len(calls))
		}
		v := &verify.Verifier{Keys: keys, Audience: "fake", Replay: verify.NewMemoryReplayCache(100)}
		var jtis []string
		for i, c := range calls {
			tok := c.Header.Get(verify.Header)
			if c.Provider == "other" {
				if tok != "" {
					t.Errorf("stream=%v: a provider that did not opt in received the token", stream)
				}
				continue
			}
			model := []string{"fake/error-500", "", "fake/ok"}[i]
			claims, err := v.Verify(context.Background(), tok, model, c.Body)
			if err != nil {
				t.Fatalf("stream=%v: attempt %d token does not verify against the JWKS and the bytes received: %v", stream, i, err)
			}
			sum := sha256.Sum256(c.Body)
			if claims.BodySHA256 != hex.EncodeToString(sum[:]) || claims.Subject == "" || claims.PolicyHash == "" {
				t.Errorf("stream=%v: claims %+v", stream, claims)
			}
			jtis = append(jtis, claims.ID)
			// One byte changed: refused.
			if _, err := (&verify.Verifier{Keys: keys, Audience: "fake", Replay: verify.NewMemoryReplayCache(10)}).Verify(context.Background(), tok, model, append([]byte(" "), c.Body...)); err == nil {
				t.Errorf("stream=%v: a token verified for a body it was not minted for", stream)
			}
		}
		if jtis[len(jtis)-1] != bundle {
			t.Errorf("stream=%v: bundle id %s is not the serving attempt's jti %v", stream, bundle, jtis)
		}

		// The receipt: a compact JWS any JOSE library verifies against the JWKS.
		status, _, rec := g.Call(t, "GET", "/receipts/"+bundle, g.Admin, "")
		if status != 200 {
			t.Fatalf("receipt: %d %s", status, rec.Raw)
		}
		var set jose.JSONWebKeySet
		if err := json.Unmarshal([]byte(jwks.Raw), &set); err != nil {
			t.Fatal(err)
		}
		jws, err := jose.ParseSignedCompact(rec.Get("receipt").String(), []jose.SignatureAlgorithm{jose.EdDSA})
		if err != nil {
			t.Fatal(err)
		}
		found := set.Key(jws.Signatures[0].Header.KeyID)
		if len(found) != 1 {
			t.Fatalf("receipt kid %q not in the JWKS", jws.Signatures[0].Header.KeyID)
		}
		payload, err := jws.Verify(found[0].Key)
		if err != nil {
			t.Fatalf("receipt signature: %v", err)
		}
		claims := gjson.ParseBytes(payload)
		attempts := claims.Get("attempts").Array()
		if claims.Get("served_model").String() != "fake/ok" || len(attempts) != 3 || attempts[2].Get("jti").String() != bundle ||
			attempts[0].Get("outcome").String() != "server_error" || attempts[2].Get("outcome").String() != "served" ||
			claims.Get("policy.name").String() != "public" {
			t.Errorf("stream=%v: receipt claims %s", stream, payload)
		}
	}
	// The receipt is the requesting key's alone; a missing or oversized id is a 400.
	other := g.NewKey(t, `{"name":"other"}`)
	if status, _, _ := g.Call(t, "GET", "/receipts/"+strings.Repeat("x", 129), other, ""); status != 400 {
		t.Errorf("over-128-character id: %d, want 400", status)
	}
	if status, _, _ := g.Call(t, "GET", "/receipts/set_doesnotexist", other, ""); status != 404 {
		t.Errorf("unknown bundle id: %d, want 404", status)
	}
}

// A policy that denies a model of the chain in enforce mode refuses the whole chain before any
// attempt; an open circuit breaker refuses with 503 — both deliberate blocks: no upstream call,
// no failover.
func TestDeliberateBlocksSendNothing(t *testing.T) {
	g := gatewaykit.ServeFakes(t, `{"eu-only":{"regions":["eu"],"mode":"enforce"}}`)
	key := g.NewKey(t, `{"name":"k","userId":"u1","allowedSMLTPPolicies":["public","eu-only"]}`)

	status, _, body := g.Call(t, "POST", "/v1/chat/completions", key, `{"models":["other/ok","fake/ok"],"smltp_policy":"eu-only","messages":[{"role":"user","content":"hi"}]}`)
	msg := body.Get("error.message").String()
	if status != 403 || !strings.Contains(msg, "other/ok") || !strings.Contains(msg, "region") {
		t.Errorf("enforced denial: %d %s; want 403 naming the model and the rule", status, body.Raw)
	}
	if n := len(g.Upstream.Calls()); n != 0 {
		t.Fatalf("%d upstream calls for a chain the policy refused", n)
	}

	if status, _, b := g.Call(t, "POST", "/admin/circuit-breakers", g.Admin, `{"subjectType":"user","subjectId":"u1","reason":"incident","durationSeconds":120}`); status/100 != 2 {
		t.Fatalf("opening a breaker: %d %s", status, b.Raw)
	}
	status, header, body := g.Call(t, "POST", "/chat/completions", key, `{"index":"Zero-Knowledge","prompt":"hi","models":["fake/error-500","fake/ok"]}`)
	if status != 503 || header.Get("Retry-After") == "" || body.Get("success").Bool() {
		t.Errorf("open breaker: %d Retry-After %q %s; want 503 with Retry-After", status, header.Get("Retry-After"), body.Raw)
	}
	if n := len(g.Upstream.Calls()); n != 0 {
		t.Errorf("%d upstream calls while the breaker was open", n)
	}
	if status, _, _ := g.Call(t, "DELETE", "/admin/circuit-breakers/user/u1", g.Admin, ""); status/100 != 2 {
		t.Fatalf("closing the breaker: %d", status)
	}
	if status, _, body := g.Call(t, "POST", "/chat/completions", key, `{"index":"Zero-Knowledge","prompt":"hi","model":"fake/ok"}`); status != 200 {
		t.Errorf("after closing: %d %s", status, body.Raw)
	}
}

// Issue 34 item 10: a breaker is opened only for a key or user that exists; any other subject is
// a 404 naming it, and nothing is opened.
func TestABreakerNeedsASubjectThatExists(t *testing.T) {
	g := gatewaykit.ServeFakes(t, "")
	g.NewKey(t, `{"name":"k","userId":"u-real"}`)
	_, _, keys := g.Call(t, "GET", "/admin/api-keys?name=k", g.Admin, "")
	keyID := keys.Get("apiKeys.0.id").String()
	for _, tc := range []struct {
		subject string
		status  int
	}{
		{`"subjectType":"key","subjectId":"key_doesnotexist"`, 404},
		{`"subjectType":"user","subjectId":"nobody"`, 404},
		{`"subjectType":"key","subjectId":"` + keyID + `"`, 201},
		{`"subjectType":"user","subjectId":"u-real"`, 201},
	} {
		status, _, body := g.Call(t, "POST", "/admin/circuit-breakers", g.Admin, `{`+tc.subject+`,"reason":"incident"}`)
		if status != tc.status || (status == 404 && body.Get("success").Bool()) {
			t.Errorf("opening {%s}: %d %s, want %d", tc.subject, status, body.Raw, tc.status)
		}
	}
	if _, _, list := g.Call(t, "GET", "/admin/circuit-breakers", g.Admin, ""); len(list.Get("circuitBreakers").Array()) != 2 {
		t.Errorf("open breakers %s, want the two whose subject exists", list.Raw)
	}
}

// POST /policy-check agrees with the real call: for each case, the dry run and then the call;
// allowed matches success, and a refusal's status is the call's status.
func TestPolicyCheckAgreesWithTheCall(t *testing.T) {
	g := gatewaykit.ServeFakes(t, `{"eu-only":{"regions":["eu"],"mode":"enforce"}}`)
	key := g.NewKey(t, `{"name":"k","userId":"u2","allowedModels":["fake/ok","fake/error-500","other/ok"],"allowedSMLTPPolicies":["public","internal","eu-only"]}`)
	broke := g.NewKey(t, `{"name":"broke","userId":"broke"}`)
	if status, _, b := g.Call(t, "PUT", "/admin/users/broke", g.Admin, `{"monthlyPoints":0}`); status != 200 {
		t.Fatalf("setting the user: %d %s", status, b.Raw)
	}
	// Issue 21 item 6: a key whose breaker is open, and one whose day is spent.
	contained := g.NewKey(t, `{"name":"contained","userId":"contained"}`)
	if status, _, b := g.Call(t, "POST", "/admin/circuit-breakers", g.Admin, `{"subjectType":"user","subjectId":"contained","reason":"incident","durationSeconds":600}`); status/100 != 2 {
		t.Fatalf("opening the breaker: %d %s", status, b.Raw)
	}
	spent := g.NewKey(t, `{"name":"spent","userId":"spent","dailyLimit":1}`)
	if status, _, b := g.Call(t, "POST", "/v1/chat/completions", spent, `{"model":"fake/ok","messages":[{"role":"user","content":"hi"}]}`); status != 200 {
		t.Fatalf("the spent key's one request of the day: %d %s", status, b.Raw)
	}
	for _, tc := range []struct {
		name, key, body string
	}{
		{"served", key, `{"model":"fake/ok","messages":[{"role":"user","content":"hi"}]}`},
		{"classic served", key, `{"index":"Zero-Knowledge","prompt":"hi","models":["fake/error-500","fake/ok"]}`},
		{"invalid input", key, `{"model":"fake/ok","messages":[]}`},
		{"model not allowed", key, `{"models":["fake/ok","fake/tools"],"messages":[{"role":"user","content":"hi"}]}`},
		{"unknown model", key, `{"model":"fake/nope","messages":[{"role":"user","content":"hi"}]}`},
		{"policy not allowed for the key", broke, `{"model":"fake/ok","smltp_policy":"eu-only","messages":[{"role":"user","content":"hi"}]}`},
		{"unknown policy", key, `{"model":"fake/ok","smltp_policy":"nope","messages":[{"role":"user","content":"hi"}]}`},
		{"policy denies a model", key, `{"model":"other/ok","smltp_policy":"eu-only","messages":[{"role":"user","content":"hi"}]}`},
		{"monitor-mode breach is allowed", key, `{"model":"fake/ok","smltp_policy":"internal","messages":[{"role":"user","content":"hi"}]}`},
		{"no points left", broke, `{"model":"fake/ok","messages":[{"role":"user","content":"hi"}]}`},
		{"circuit breaker open", contained, `{"model":"fake/ok","messages":[{"role":"user","content":"hi"}]}`},
		{"daily limit spent", spent, `{"model":"fake/ok","messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := len(g.Upstream.Calls())
			status, _, dry := g.Call(t, "POST", "/policy-check", tc.key, tc.body)
			if status != 200 || !dry.Get("dry_run").Bool() {
				t.Fatalf("policy-check: %d %s", status, dry.Raw)
			}
			if n := len(g.Upstream.Calls()); n != calls {
				t.Fatalf("the dry run called a provider")
			}
			path := "/v1/chat/completions"
			if strings.Contains(tc.body, `"index"`) {
				path = "/chat/completions"
			}
			real, _, body := g.Call(t, "POST", path, tc.key, tc.body)
			allowed := dry.Get("allowed").Bool()
			if allowed != (real == 200) {
				t.Fatalf("dry run allowed=%v, the call answered %d %s\ndry run: %s", allowed, real, body.Raw, dry.Raw)
			}
			if allowed {
				return
			}
			// In the order the real call runs them.
			for _, c := range []string{"input", "model_access", "smltp_policy", "circuit_breaker", "smltp_policy_access", "rate_limit", "quota"} {
				if chk := dry.Get("checks." + c); !chk.Get("passed").Bool() && chk.Get("status").Exists() {
					if int(chk.Get("status").Int()) != real {
						t.Errorf("dry run's %s says %d, the call answered %d", c, chk.Get("status").Int(), real)
					}
					return
				}
			}
			t.Errorf("dry run refused without a failed check carrying a status: %s", dry.Raw)
		})
	}
}

// What a key may spend: its request limits (exact, then a 429 with reset_time, Retry-After and an
// api:limit_reached audit entry), billing of the served model only, revocation at once locally.
func TestLimitsBillingAndRevocation(t *testing.T) {
	g := gatewaykit.ServeFakes(t, "")
	key := g.NewKey(t, `{"name":"limited","userId":"u3","rateLimit":{"requestsPerMinute":3}}`)
	// Windows are calendar minutes: start early in one, so the four requests share it even on a
	// slow machine.
	if now := time.Now(); now.Second() >= 40 {
		time.Sleep(now.Truncate(time.Minute).Add(time.Minute).Sub(now))
	}
	body := `{"index":"Zero-Knowledge","prompt":"hi","models":["fake/error-500","fake/ok"]}`
	for i := range 3 {
		if status, _, b := g.Call(t, "POST", "/chat/completions", key, body); status != 200 {
			t.Fatalf("request %d: %d %s", i+1, status, b.Raw)
		}
	}
	status, header, refused := g.Call(t, "POST", "/chat/completions", key, body)
	if status != 429 || refused.Get("error").String() != "Rate limit exceeded: too many requests per minute" ||
		!refused.Get("reset_time").Exists() || header.Get("Retry-After") == "" || len(refused.Get("attempts").Array()) != 0 {
		t.Errorf("over the limit: %d Retry-After %q %s", status, header.Get("Retry-After"), refused.Raw)
	}
	// Three failovers from a 5-point model to a 1-point one bill 3 points, not 18.
	_, _, usage := g.Call(t, "GET", "/usage", key, "")
	if used := usage.Get("points.used").Int(); used != 3 {
		t.Errorf("points used %d after three served requests of a 1-point model, want 3: %s", used, usage.Raw)
	}
	if usage.Get("api_key.rate_limit.requests_per_minute.used").Int() != 3 {
		t.Errorf("usage does not count the admitted requests (only): %s", usage.Raw)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, _, logs := g.Call(t, "GET", "/admin/audit-logs?type=api:limit_reached", g.Admin, "")
		if len(logs.Get("logs").Array()) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no api:limit_reached audit entry: %s", logs.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Revocation takes effect on the next request.
	_, _, listed := g.Call(t, "GET", "/admin/api-keys", g.Admin, "")
	var id string
	for _, k := range listed.Get("apiKeys").Array() {
		if k.Get("name").String() == "limited" {
			id = k.Get("id").String()
		}
	}
	if status, _, b := g.Call(t, "DELETE", "/admin/api-keys/"+id, g.Admin, ""); status != 200 {
		t.Fatalf("revoke %q: %d %s", id, status, b.Raw)
	}
	if status, _, _ := g.Call(t, "GET", "/usage", key, ""); status != 401 {
		t.Errorf("a revoked key: %d, want 401", status)
	}
	if status, _, _ := g.Call(t, "GET", "/admin/api-keys", g.NewKey(t, `{"name":"plain"}`), ""); status != 403 {
		t.Errorf("admin route with a normal key: %d, want 403", status)
	}
	if status, _, _ := g.Call(t, "GET", "/admin/api-keys", "", ""); status != 401 {
		t.Errorf("admin route without a key: %d, want 401", status)
	}
}

// SPEC 7: a request refused for its quota is counted in no window (the ledger counts the request
// and holds its reservation in one step, or neither).
func TestAQuotaRefusalIsCountedInNoWindow(t *testing.T) {
	g := gatewaykit.ServeFakes(t, "")
	broke := g.NewKey(t, `{"name":"broke","userId":"broke-too"}`)
	if status, _, b := g.Call(t, "PUT", "/admin/users/broke-too", g.Admin, `{"monthlyPoints":0}`); status != 200 {
		t.Fatalf("setting the user: %d %s", status, b.Raw)
	}
	for range 2 {
		status, _, b := g.Call(t, "POST", "/v1/chat/completions", broke, `{"model":"fake/ok","messages":[{"role":"user","content":"hi"}]}`)
		if status != 402 || b.Get("error.code").String() != "points_exhausted" {
			t.Fatalf("a user with no points: %d %s", status, b.Raw)
		}
	}
	_, _, usage := g.Call(t, "GET", "/usage", broke, "")
	for _, w := range []string{"requests_per_minute", "requests_per_hour"} {
		if used := usage.Get("api_key.rate_limit." + w + ".used"); !used.Exists() || used.Int() != 0 {
			t.Errorf("%s used = %s after two quota refusals, want 0: %s", w, used.Raw, usage.Raw)
		}
	}
}
