package event_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/event"
)

// schemaDir holds the published schemas EventBridge subscribers and webhook receivers code against.
const schemaDir = "../../docs/events"

func schemaFile(t event.Type) string {
	return filepath.Join(schemaDir, strings.ReplaceAll(string(t), ":", ".")+".schema.json")
}

// emitted returns a real event of every catalog type, as the constructors make them, with every
// optional field set, so the schemas are checked against everything the gateway can send.
func emitted(t *testing.T) []event.Event {
	now := time.Date(2026, 12, 1, 2, 3, 4, 5, time.UTC)
	sub := event.Subject{UserID: "user_1", APIKeyID: "key_1", RequestID: "req_1"}
	out := []event.Event{
		event.ModelFailoverEvent(event.Failover{FailedModel: "anthropic/claude-sonnet-4", FailedProvider: "anthropic", Reason: "rate_limit",
			NextModel: "anthropic/claude-sonnet-4", NextProvider: "bedrock", LatencyMs: 812, Subject: sub}, now),
		event.LimitReachedEvent(event.Limit{Limit: "requests_per_minute", Max: 60, ResetTime: now.Add(time.Minute), Endpoint: "/v1/chat/completions", Subject: sub}, now),
		event.ChainExhaustedEvent(event.Exhausted{Models: []string{"openai/gpt-5-nano", "anthropic/claude-sonnet-4"}, Attempts: 3,
			LastModel: "anthropic/claude-sonnet-4", LastProvider: "bedrock", LastReason: "server_error", Status: 502, Endpoint: "/chat/completions", Subject: sub}, now),
		event.WebhookTestEvent("wh_1", sub, now),
		event.EndpointDisabledEvent(event.EndpointDisabled{EndpointID: "wh_1", URL: "https://hooks.example.com", URLFingerprint: "sha256:0123456789abcdef",
			Reason: "gone", ConsecutiveFailures: 1}, now),
		event.BreakerEvent(true, event.Breaker{Scope: "key", ScopeID: "key_1", Cause: "admin", Until: now.Add(time.Hour), Subject: sub}, now),
		event.BreakerEvent(false, event.Breaker{Scope: "user", ScopeID: "user_1", Cause: "admin", Subject: sub}, now),
		event.BudgetThresholdEvent(event.Threshold{Budget: "dollars", Threshold: 80, Limit: 25_000_000, Spend: 20_000_125, LimitDollars: 25,
			SpendDollars: 20.000125, PeriodStart: now.AddDate(0, 0, -1), PeriodEnd: now.AddDate(0, 1, -1), Subject: sub}, now),
	}
	for _, typ := range event.Catalog() {
		if !typ.IsAdmin() {
			continue
		}
		if typ == event.AdminConsoleAction {
			// A refused console sign-in (issue 34 item 5): the client and why, as the console sends it.
			e, err := event.AdminEvent(typ, event.Admin{Action: "sign_in_failed", Target: event.Target{Kind: "console_session"}, Subject: sub},
				nil, map[string]any{"client": "198.51.100.7", "reason": "unknown API key"}, now)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
		action, subject := "update", sub
		if typ == event.AdminConsoleAction {
			action = "sign_in" // the console's actions are its own: sign_in, sign_out, request
			subject.Via, subject.OperatorKeyID = event.ViaConsole, "key_operator"
		}
		e, err := event.AdminEvent(typ, event.Admin{Action: action, Target: event.Target{Kind: "webhook", ID: "wh_1"}, Subject: subject},
			map[string]any{"enabled": false}, map[string]any{"enabled": true}, now)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// wrongValue is, per type, a data field set to what the gateway never sends.
var wrongValue = map[event.Type]struct {
	field string
	value any
}{
	event.ModelFailover:           {"reason", "rate_limited"}, // the spelling the docs' sample once had
	event.LimitReached:            {"limit", "requests_per_second"},
	event.ChainExhausted:          {"status", 500},
	event.WebhookTest:             {"endpointId", 1},
	event.WebhookEndpointDisabled: {"reason", "disabled"},
	event.CircuitBreakerOpened:    {"cause", "policy_violations"},
	event.CircuitBreakerClosed:    {"scope", "model"},
	event.BudgetThreshold:         {"threshold", 150},
	"admin:*":                     {"action", "edit"},
}

// The failover reasons the schema lists are exactly the chain's.
func TestFailoverReasonEnumIsTheChains(t *testing.T) {
	raw, err := os.ReadFile(schemaFile(event.ModelFailover))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			Data struct {
				Properties struct {
					Reason struct {
						Enum []chain.Reason `json:"enum"`
					} `json:"reason"`
				} `json:"properties"`
			} `json:"data"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	// A failover's reason is a failure's (chain.Reasons), or hedge_after when the next model
	// started beside a running one.
	want := append(slices.Clone(chain.Reasons[:]), chain.HedgeAfter)
	if got := s.Properties.Data.Properties.Reason.Enum; !slices.Equal(got, want) {
		t.Errorf("reason enum %v, want chain.Reasons and hedge_after %v", got, want)
	}
}

func TestEmittedEventsMatchThePublishedSchemas(t *testing.T) {
	seen := map[event.Type]bool{}
	for _, e := range emitted(t) {
		t.Run(string(e.Type), func(t *testing.T) {
			seen[e.Type] = true
			c := jsonschema.NewCompiler()
			c.Draft = jsonschema.Draft2020
			c.AssertFormat = true
			schema, err := c.Compile(schemaFile(e.Type))
			if err != nil {
				t.Fatalf("schema for %s: %v", e.Type, err)
			}
			raw, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(v); err != nil {
				t.Errorf("%s does not match its schema: %v\n%s", e.Type, err, raw)
			}
			// Forward compatible: a field added later (in the envelope or the data) is accepted.
			v.(map[string]any)["unexpected"] = 1
			v.(map[string]any)["data"].(map[string]any)["unexpected"] = map[string]any{"any": "shape"}
			if err := schema.Validate(v); err != nil {
				t.Errorf("the schema refuses a field it does not describe: %v", err)
			}
			// The check is live: a value outside the type's enum (or of the wrong type) fails it.
			bad, ok := wrongValue[e.Type]
			if !ok {
				bad = wrongValue["admin:*"]
			}
			v.(map[string]any)["data"].(map[string]any)[bad.field] = bad.value
			if schema.Validate(v) == nil {
				t.Errorf("the schema accepts %s = %v", bad.field, bad.value)
			}
		})
	}
	for _, typ := range event.Catalog() {
		if !seen[typ] {
			t.Errorf("catalog type %s is never emitted by this test", typ)
		}
	}
	files, _ := filepath.Glob(filepath.Join(schemaDir, "*.schema.json"))
	if len(files) != len(event.Catalog()) {
		t.Errorf("%d schema files for %d catalog types", len(files), len(event.Catalog()))
	}
}

// The sample event in the docs is a real event of its type.
func TestSampleEventMatchesItsSchema(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(schemaDir, "sample-eventbridge-event.json"))
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		DetailType string `json:"detail-type"`
		Detail     any    `json:"detail"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	schema, err := jsonschema.Compile(schemaFile(event.Type(env.DetailType)))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(env.Detail); err != nil {
		t.Errorf("sample detail: %v", err)
	}
}
