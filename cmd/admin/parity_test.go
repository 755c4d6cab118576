package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
)

// The CLI and the admin API are one admin service (issue 20 item 2): the same operations, run
// through each against its own store, refuse the same mistakes, store the same records and write
// the same audit trail — read back through the admin API of a gateway on each store.
func TestTheCLIAndTheAdminAPIKeepTheSameRecords(t *testing.T) {
	t.Setenv("SECUREAI_TABLE_API_KEYS", "")
	t.Setenv("SECUREAI_CONFIG", "")
	t.Setenv("SECUREAI_DEMO", "") // the local default: on, as make run has it
	cat, stop, err := gateway.Catalog("", true)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	// Through the admin API, with the bootstrap admin key.
	api := gatewaykit.Serve(t, cat, gatewaykit.Env(), gatewaykit.Unvalidated())
	call := func(method, path, body string, want int) map[string]any {
		t.Helper()
		return adminCall(t, api.URL, api.Admin, method, path, body, want)
	}
	call("POST", "/admin/api-keys", `{"name": "ops", "admin": true}`, 201)
	call("PUT", "/admin/users/team-a", `{"monthlyPoints": 2000, "renewalDay": 1, "usageByModel": {"enabled": true, "dollarLimit": 50}, "budgetThresholds": [75, 90]}`, 200)
	app := call("POST", "/admin/api-keys", `{"name": "app", "userId": "team-a", "rateLimit": {"requestsPerMinute": 30}, "dailyLimit": 500,
		"allowedModels": ["demo/ok", "demo/error-500"], "allowedSMLTPPolicies": ["public"],
		"failoverDefaults": {"models": ["demo/error-500", "demo/ok"], "timeout_ms": 20000}}`, 201)
	refused := call("POST", "/admin/api-keys", `{"name": "bad", "allowedSMLTPPolicies": ["no-such-policy"]}`, 400)
	call("POST", "/admin/api-keys", `{"name": "bad", "allowedModels": ["demo/no-such-model"]}`, 400)
	call("DELETE", "/admin/api-keys/"+app["apiKey"].(map[string]any)["id"].(string), "", 200)

	// Through the CLI, on a store of its own.
	db := filepath.Join(t.TempDir(), "gateway.db")
	cli := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), args[0], append([]string{"-db", db}, args[1:]...), &out)
		return out.String(), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := cli(args...)
		if err != nil {
			t.Fatalf("admin %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	out := must("create-key", "-name", "ops", "-admin")
	opsSecret := regexp.MustCompile(`(?m)^    (sk-[0-9a-f]{64})$`).FindStringSubmatch(out)
	if opsSecret == nil {
		t.Fatalf("create-key printed no secret:\n%s", out)
	}
	must("set-user", "-id", "team-a", "-points", "2000", "-renewal-day", "1", "-usage-by-model", "true", "-dollar-limit", "50", "-budget-thresholds", "90,75")
	out = must("create-key", "-name", "app", "-user", "team-a", "-per-minute", "30", "-daily", "500",
		"-models", "demo/ok,demo/error-500", "-policies", "public", "-defaults", "demo/error-500,demo/ok", "-timeout-ms", "20000")
	appID := regexp.MustCompile(`Created key (key_[0-9a-f]+)`).FindStringSubmatch(out)
	if appID == nil {
		t.Fatalf("create-key printed no id:\n%s", out)
	}
	for _, bad := range [][]string{
		{"create-key", "-name", "bad", "-policies", "no-such-policy"},
		{"create-key", "-name", "bad", "-models", "demo/no-such-model"},
	} {
		if _, err := cli(bad...); err == nil {
			t.Errorf("admin %s was accepted; the admin API refuses it", strings.Join(bad, " "))
		}
	}
	apiRefusal, _ := json.Marshal(refused)
	if _, err := cli("create-key", "-name", "bad", "-policies", "no-such-policy"); err == nil ||
		!strings.Contains(err.Error(), "no-such-policy") || !strings.Contains(string(apiRefusal), "no-such-policy") {
		t.Errorf("the CLI's refusal (%v) and the API's (%s) should both name the unknown policy", err, apiRefusal)
	}
	must("revoke-key", "-id", appID[1])

	env := gatewaykit.Env()
	env.BootstrapKey = opsSecret[1]
	fromCLI := gatewaykit.ServeAt(t, db, cat, env, gatewaykit.Unvalidated())

	viaAPI, viaCLI := records(t, api.URL, api.Admin), records(t, fromCLI.URL, fromCLI.Admin)
	if !reflect.DeepEqual(viaAPI.keys, viaCLI.keys) {
		t.Errorf("keys differ:\nthrough the API: %v\nthrough the CLI: %v", viaAPI.keys, viaCLI.keys)
	}
	if !reflect.DeepEqual(viaAPI.user, viaCLI.user) {
		t.Errorf("user team-a differs:\nthrough the API: %v\nthrough the CLI: %v", viaAPI.user, viaCLI.user)
	}
	if !reflect.DeepEqual(viaAPI.audit, viaCLI.audit) {
		t.Errorf("audit trails differ:\nthrough the API: %v\nthrough the CLI: %v", viaAPI.audit, viaCLI.audit)
	}
	// ops's own user, ops, team-a, app, app's revocation: newest first.
	want := []string{"admin:api_key_revoked", "admin:api_key_created", "admin:user_updated", "admin:api_key_created", "admin:user_updated"}
	if got := types(viaCLI.audit); !reflect.DeepEqual(got, want) {
		t.Errorf("audit trail through the CLI: %v, want %v", got, want)
	}
	// Who made the change differs by nature: the admin key through the API, nobody's through the
	// CLI (its actor is "cli").
	for i, actors := range [][]string{viaAPI.actors, viaCLI.actors} {
		for _, a := range actors {
			if (i == 0) != (a != "") {
				t.Errorf("an audit entry's actor %q through the %s", a, [2]string{"API", "CLI"}[i])
			}
		}
	}
}

func types(entries []any) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.(map[string]any)["type"].(string))
	}
	return out
}

// stored is what a gateway's admin API shows of the test's records, with what differs by nature
// (ids, secrets' prefixes, times, the actor's and the request's ids) masked.
type stored struct {
	keys   []any // ops and app, in that order
	user   any
	audit  []any    // the admin events, newest first, without who made them
	actors []string // the admin key that made each change ("" for none)
}

func records(t *testing.T, url, admin string) stored {
	t.Helper()
	var s stored
	byName := map[string]any{}
	for _, k := range adminCall(t, url, admin, "GET", "/admin/api-keys", "", 200)["apiKeys"].([]any) {
		byName[k.(map[string]any)["name"].(string)] = mask(k)
	}
	s.keys = []any{byName["ops"], byName["app"]}
	s.user = mask(adminCall(t, url, admin, "GET", "/admin/users/team-a", "", 200))
	// The audit writer runs behind the event pipeline: wait for the five changes to arrive.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.audit, s.actors = s.audit[:0], s.actors[:0]
		for _, e := range adminCall(t, url, admin, "GET", "/admin/audit-logs?limit=100", "", 200)["logs"].([]any) {
			if entry := e.(map[string]any); strings.HasPrefix(entry["type"].(string), "admin:") {
				s.actors = append(s.actors, withoutActor(entry))
				s.audit = append(s.audit, mask(entry))
			}
		}
		if len(s.audit) >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

// withoutActor removes from an audit entry who made the change and in which request, and returns
// the admin key's id.
func withoutActor(entry map[string]any) string {
	meta := entry["metadata"].(map[string]any)
	data := meta["data"].(map[string]any)
	actor, _ := meta["apiKeyId"].(string)
	delete(entry, "user")
	for _, m := range []map[string]any{meta, data} {
		delete(m, "apiKeyId")
		delete(m, "requestId")
		delete(m, "userId")
	}
	return actor
}

// volatile are the fields that differ between two runs of the same operations.
var volatile = map[string]bool{"id": true, "prefix": true, "createdAt": true, "updatedAt": true, "revokedAt": true,
	"lastUsedAt": true, "timestamp": true, "time": true, "requestId": true, "apiKeyId": true, "periodStart": true,
	"periodEnd": true, "renewsAt": true}

var keyID = regexp.MustCompile(`\bkey_[0-9a-f]{16}\b`)

func mask(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if volatile[k] {
				out[k] = "…"
				continue
			}
			out[k] = mask(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = mask(e)
		}
		return out
	case string:
		return keyID.ReplaceAllString(v, "key_…")
	}
	return v
}

func adminCall(t *testing.T, url, admin, method, path, body string, want int) map[string]any {
	t.Helper()
	req, err := http.NewRequest(method, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, raw)
	}
	return m
}
