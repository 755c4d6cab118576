package templatetest

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/local/localserver"
)

// chatEndpoints are the chat surfaces' endpoints (those that need what a chat surface needs), so
// a surface added to the local server is held to every rule of a chat function here.
func chatEndpoints() []gateway.Endpoint {
	var out []gateway.Endpoint
	for _, e := range localserver.Endpoints() {
		if e.Needs == gateway.ChatNeeds {
			out = append(out, e)
		}
	}
	return out
}

// chatFunctions are the chat surfaces' functions, each of which can hold an execution for a
// whole stream.
var chatFunctions = func() []string {
	var fns []string
	for _, e := range chatEndpoints() {
		fns = append(fns, e.Function)
	}
	return fns
}()

// The chat surfaces are the ones this package's rules name: if a change made them fewer, a rule
// would quietly stop covering one.
func TestChatFunctionsAreTheChatSurfaces(t *testing.T) {
	for _, fn := range []string{"OpenAIChatFunction", "ClassicChatFunction", "MessagesFunction", "ResponsesFunction"} {
		if !slices.Contains(chatFunctions, fn) {
			t.Errorf("%s is not among the chat functions %v", fn, chatFunctions)
		}
	}
}

// Cost is bounded: each chat function runs at most ChatConcurrency executions (0 lifts the bound),
// the stage keeps its throttling (TestOneStage), and every log — each function's and the API's
// access log — is kept for LogRetentionDays.
func TestChatConcurrencyIsReserved(t *testing.T) {
	for _, tc := range []struct {
		param string
		want  any // ReservedConcurrentExecutions (the parameter's value), nil for none
	}{{"", "50"}, {"7", "7"}, {"0", nil}} {
		params := map[string]string{}
		if tc.param != "" {
			params["ChatConcurrency"] = tc.param
		}
		c := transformed(t, params)
		for _, fn := range chatFunctions {
			if got := dig(c.props(t, fn), "ReservedConcurrentExecutions"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ChatConcurrency=%q: %s has ReservedConcurrentExecutions %v, want %v", tc.param, fn, got, tc.want)
			}
		}
	}
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var contextVar = regexp.MustCompile(`\$context\.[A-Za-z.]+`)

func TestLogsAreKeptForTheRetention(t *testing.T) {
	c := transformed(t, map[string]string{"LogRetentionDays": "90"})
	retention := func(what string, group any) {
		t.Helper()
		id := refOrAtt(group)
		if c.Resources[id].Type != "AWS::Logs::LogGroup" {
			t.Errorf("%s logs to %v, not a log group of the stack", what, group)
			return
		}
		if got := dig(c.props(t, id), "RetentionInDays"); got != "90" {
			t.Errorf("%s logs to %s, kept for %v days; want LogRetentionDays (90)", what, id, got)
		}
	}
	for _, fn := range c.ofType("AWS::Lambda::Function") {
		retention(fn, dig(c.props(t, fn), "LoggingConfig", "LogGroup"))
	}
	stages := c.ofType("AWS::ApiGateway::Stage")
	if len(stages) != 1 {
		t.Fatalf("stages %v, want one", stages)
	}
	access := dig(c.props(t, stages[0]), "AccessLogSetting")
	retention("the API's access log", dig(access, "DestinationArn"))
	format, _ := dig(access, "Format").(string)
	// API Gateway writes each $context variable's value as it is ("-" when it has none), and a
	// messageString variable quoted; what it writes must still be JSON.
	written := contextVar.ReplaceAllStringFunc(format, func(v string) string {
		if strings.HasSuffix(v, "String") {
			return `"-"`
		}
		return "-"
	})
	var entry map[string]any
	if err := json.Unmarshal([]byte(written), &entry); err != nil {
		t.Fatalf("the access log is not one JSON object per request when values are missing (%v): %s", err, written)
	}
	for _, v := range []string{"$context.requestId", "$context.status", "$context.responseLatency", "$context.integrationLatency"} {
		if !strings.Contains(format, v) {
			t.Errorf("the access log does not record %s: %s", v, format)
		}
	}
}

// API Gateway writes an access log only once the region's account settings name a CloudWatch Logs
// role: the stack sets one (and creates its stage after it) unless told one is set already.
func TestAccessLogsHaveTheAccountRole(t *testing.T) {
	for _, mode := range []string{"create", "existing"} {
		c := transformed(t, map[string]string{"ApiGatewayLogsRole": mode})
		var accounts []string
		for _, id := range c.ofType("AWS::ApiGateway::Account") {
			if c.present(t, id) {
				accounts = append(accounts, id)
			}
		}
		if mode == "existing" {
			if len(accounts) != 0 {
				t.Errorf("ApiGatewayLogsRole=existing still sets the account's role: %v", accounts)
			}
			continue
		}
		if len(accounts) != 1 {
			t.Fatalf("ApiGatewayLogsRole=create: account settings %v, want one", accounts)
		}
		role := refOrAtt(dig(c.props(t, accounts[0]), "CloudWatchRoleArn"))
		if !strings.Contains(jsonString(t, dig(c.props(t, role), "ManagedPolicyArns")), "AmazonAPIGatewayPushToCloudWatchLogs") {
			t.Errorf("the account's role %s lacks AmazonAPIGatewayPushToCloudWatchLogs", role)
		}
		if c.Resources[role].DeletionPolicy != "Retain" {
			t.Errorf("the account's role %s is deleted with the stack, leaving the region's setting naming no role", role)
		}
		for _, stage := range c.ofType("AWS::ApiGateway::Stage") {
			if !strings.Contains(jsonString(t, c.props(t, stage)), `"Ref":"`+accounts[0]+`"`) {
				t.Errorf("stage %s is not ordered after %s: its access log setting would be refused", stage, accounts[0])
			}
		}
	}
}

// Idempotency-Key works on every chat surface in the deployment as it does locally: each chat
// function is told the idempotency table and may make exactly the store's three calls on it.
func TestChatSurfacesKeepIdempotencyKeys(t *testing.T) {
	c := transformed(t, nil)
	for _, fn := range chatFunctions {
		if got := refOrAtt(dig(c.props(t, fn), "Environment", "Variables", "SECUREAI_TABLE_IDEMPOTENCY")); got != "IdempotencyTable" {
			t.Errorf("%s: SECUREAI_TABLE_IDEMPOTENCY is %v, want IdempotencyTable (else an Idempotency-Key is answered 501)", fn, got)
		}
		var actions []string
		for _, pol := range asList(dig(c.props(t, fn+"Role"), "Policies")) {
			for _, st := range asList(dig(pol, "PolicyDocument", "Statement")) {
				if strings.Contains(jsonString(t, dig(st, "Resource")), `"IdempotencyTable"`) {
					for _, a := range asList(dig(st, "Action")) {
						actions = append(actions, a.(string))
					}
					if a, ok := dig(st, "Action").(string); ok {
						actions = append(actions, a)
					}
				}
			}
		}
		slices.Sort(actions)
		if want := []string{"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem"}; !slices.Equal(actions, want) {
			t.Errorf("%s may call %v on the idempotency table, want exactly %v", fn, actions, want)
		}
	}
}
