package functest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// TestFunctionsRunOnTheirOwnPolicies runs every function's built binary under the emulator
// against moto with IAM enforced, on credentials whose only policy is the function's own, as the
// SAM translator expands it from template.yaml, resolved to the emulator's resources; each
// function is told the resources its template environment names. Every events/*.json of the
// function, plus a failover, a limit refusal, an idempotent replay, a webhook fan-out and
// delivery, must run without one AccessDenied. A role missing a statement its code needs is
// answered 500 configuration_error, never a 503 to retry.
//
// moto authorizes a call's action for every service but matches a policy's Resource only for SQS
// queues (elsewhere against "*"), and it answers a denial in XML, which the SDK cannot read from a
// JSON service. So the functions call moto through iamProxy, which authorizes every DynamoDB call
// against the function's policy by its table (and index) ARNs, item by item in a transaction as
// AWS does, and answers a denial as DynamoDB would.
func TestFunctionsRunOnTheirOwnPolicies(t *testing.T) {
	root := testenv.RepoRoot(t)
	ids := functionIDs(t, root)
	dirs := slices.Sorted(maps.Keys(ids))
	built := make(chan map[string]string, 1)
	go func() { built <- buildAll(t, root, dirs) }()

	moto := testenv.MotoIAM(t)
	st := newStack(t, moto)
	proxy := newIAMProxy(t, moto.Endpoint)
	files := eventFiles(t, root, functionNames(t, root))
	bins := <-built
	if bins == nil {
		t.FailNow()
	}

	var bundleID string // of openai-chat's plain answer, for the receipts function
	for _, dir := range dirs {
		id := ids[dir]
		t.Run(dir, func(t *testing.T) {
			policy := st.policy(t, id)
			l := st.start(t, moto, proxy, bins[dir], id, policy)
			streaming := st.streams(id)
			invoke := func(t *testing.T, ev []byte) response {
				t.Helper()
				out := l.Invoke(t, ev)
				if streaming {
					return decodeStreamed(t, out)
				}
				return decodeBuffered(t, out)
			}
			t.Cleanup(func() {
				if denied := proxy.denials(); len(denied) > 0 {
					t.Errorf("%s was denied %d calls on its own policy:\n%s\nfunction output:\n%s", id, len(denied), strings.Join(denied, "\n"), l.Output())
				}
				proxy.reset()
			})
			switch dir {
			case "audit-writer", "event-relay":
				invokeBatch(t, l, readEvent(t, root, dir+"-event"))
				return
			case "webhook-dispatcher":
				st.checkWebhookDelivery(t, l, readEvent(t, root, dir+"-event"))
				return
			}
			for _, kind := range wantedKinds[dir] {
				t.Run(kind, func(t *testing.T) {
					r := invoke(t, files[dir][kind])
					check(t, dir, kind, r)
					if dir == "openai-chat" && kind == "plain" {
						bundleID, _ = lookup(jsonBody(t, r, http.StatusOK), "secureai", "smltp_bundle_id").(string)
					}
				})
			}
			switch dir {
			case "openai-chat", "classic-chat", "messages", "responses":
				t.Run("idempotent-replay", func(t *testing.T) { checkReplay(t, invoke, files[dir]["streaming"], st.fx) })
				t.Run("limit-refusal", func(t *testing.T) { st.checkLimitRefusal(t, invoke, files[dir]["plain"]) })
			case "admin":
				t.Run("admin-key", func(t *testing.T) { checkAdmin(t, invoke, files[dir]["not-admin"], st.fx) })
			case "receipts":
				t.Run("served-request", func(t *testing.T) { checkReceipt(t, invoke, files[dir]["not-found"], bundleID) })
			}
		})
	}

	// The chat functions wrote their request counts after their answers (on their own policies);
	// the admin function reads them on its own.
	t.Run("request-stats", func(t *testing.T) {
		l := st.start(t, moto, proxy, bins["admin"], "AdminFunction", st.policy(t, "AdminFunction"))
		defer func() {
			if denied := proxy.denials(); len(denied) > 0 {
				t.Errorf("AdminFunction was denied %d calls reading request stats:\n%s", len(denied), strings.Join(denied, "\n"))
			}
			proxy.reset()
		}()
		checkRequestStats(t, func(t *testing.T, ev []byte) response { return decodeBuffered(t, l.Invoke(t, ev)) }, files["admin"]["not-admin"], st.fx)
	})

	// A role without a statement its code needs: the models function cannot read API keys.
	t.Run("missing-statement", func(t *testing.T) {
		const id = "ModelsFunction"
		policy := slices.DeleteFunc(st.policy(t, id), func(s statement) bool { return slices.Contains(s.actions(), "dynamodb:GetItem") })
		l := st.start(t, moto, proxy, bins["models"], id, policy)
		defer proxy.reset()
		r := decodeBuffered(t, l.Invoke(t, files["models"]["plain"]))
		v := jsonBody(t, r, http.StatusInternalServerError)
		expectString(t, v, fault.CodeConfiguration, "error", "code")
		if r.header.Get("Retry-After") != "" || r.header.Get("X-Should-Retry") == "true" {
			t.Errorf("a configuration error invites a retry: %v", r.header)
		}
		// The function's log reaches the emulator's output through a pipe, which a busy machine
		// may deliver after the response: wait (bounded) for the line rather than read once.
		const lacks = "the function's role lacks dynamodb:GetItem"
		out := l.Output()
		for end := time.Now().Add(5 * time.Second); !strings.Contains(out, lacks) && time.Now().Before(end); out = l.Output() {
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(out, lacks) {
			t.Errorf("the log does not say what the role lacks:\n%s", out)
		}
		if len(proxy.denials()) == 0 {
			t.Error("no call was denied: the test removed nothing the function needs")
		}
	})
}

// functionIDs maps each functions/<dir> to its template logical id by the Makefile's build
// targets (build-<LogicalId>: ; $(call lambda_build,<dir>,…)).
func functionIDs(t *testing.T, root string) map[string]string {
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^build-([A-Za-z0-9]+): ; \$\(call lambda_build,([a-z0-9-]+),`).FindAllSubmatch(b, -1) {
		ids[string(m[2])] = string(m[1])
	}
	entries, err := os.ReadDir(filepath.Join(root, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := ids[e.Name()]; e.IsDir() && !ok {
			t.Fatalf("functions/%s has no build-<LogicalId> target in the Makefile", e.Name())
		}
	}
	return ids
}

func readEvent(t *testing.T, root, name string) []byte {
	b, err := os.ReadFile(filepath.Join(root, "events", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// invokeBatch sends an SQS batch to a consumer, which must report no failed item.
func invokeBatch(t *testing.T, l *testenv.Lambda, payload []byte) {
	t.Helper()
	var resp events.SQSEventResponse
	out := l.Invoke(t, payload)
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("response %s (%v), want no failed items\n%s", out, err, l.Output())
	}
}

// withHeader returns an API Gateway proxy event with one header set (in both header maps).
func withHeader(t *testing.T, event []byte, name, value string) []byte {
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	ev.Headers = maps.Clone(ev.Headers)
	ev.MultiValueHeaders = maps.Clone(ev.MultiValueHeaders)
	for k := range ev.Headers {
		if strings.EqualFold(k, name) {
			delete(ev.Headers, k)
		}
	}
	for k := range ev.MultiValueHeaders {
		if strings.EqualFold(k, name) {
			delete(ev.MultiValueHeaders, k)
		}
	}
	if ev.Headers == nil {
		ev.Headers = map[string]string{}
	}
	if ev.MultiValueHeaders == nil {
		ev.MultiValueHeaders = map[string][]string{}
	}
	ev.Headers[name] = value
	ev.MultiValueHeaders[name] = []string{value}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withKey returns an API Gateway proxy event sent with the API key secret instead of its own, in
// the header it carries its key in (Authorization, or Anthropic's x-api-key, which wins).
func withKey(t *testing.T, event []byte, secret string) []byte {
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	b := withHeader(t, event, "Authorization", "Bearer "+secret)
	for k := range ev.Headers {
		if strings.EqualFold(k, "X-Api-Key") {
			b = withHeader(t, b, "X-Api-Key", secret)
		}
	}
	return b
}

// stack is template.yaml's tables, secrets, bus and queues created on the IAM-enforcing moto (by
// its admin), and the transformed template's references resolved to them.
type stack struct {
	tmpl struct {
		Parameters map[string]map[string]any `json:"Parameters"`
		Resources  map[string]struct {
			Type       string         `json:"Type"`
			Properties map[string]any `json:"Properties"`
		} `json:"Resources"`
	}
	ref, arn, name map[string]string // logical id → what Ref, GetAtt Arn and GetAtt QueueName give
	admin          aws.Config
	fx             fixture // the admin's view, for the checks shared with the other emulator tests
	webhookQueue   string  // the webhook dispatcher's queue URL
}

const (
	motoAccount = "123456789012"
	motoRegion  = testenv.Region
)

// tableFields places each table of the template in dynamostore's schema.
var tableFields = map[string]func(*dynamostore.Tables) *string{
	"ApiKeysTable":         func(t *dynamostore.Tables) *string { return &t.APIKeys },
	"IdempotencyTable":     func(t *dynamostore.Tables) *string { return &t.Idempotency },
	"LimitsTable":          func(t *dynamostore.Tables) *string { return &t.Limits },
	"UsersTable":           func(t *dynamostore.Tables) *string { return &t.Users },
	"ReceiptsTable":        func(t *dynamostore.Tables) *string { return &t.Receipts },
	"CircuitBreakersTable": func(t *dynamostore.Tables) *string { return &t.CircuitBreakers },
	"WebhooksTable":        func(t *dynamostore.Tables) *string { return &t.Webhooks },
	"WebhookAttemptsTable": func(t *dynamostore.Tables) *string { return &t.WebhookAttempts },
	"AuditTable":           func(t *dynamostore.Tables) *string { return &t.Audit },
	"ProviderHealthTable":  func(t *dynamostore.Tables) *string { return &t.ProviderHealth },
}

func newStack(t *testing.T, moto *testenv.IAMMoto) *stack {
	out, err := testenv.SAMTransform(nil)
	if err != nil {
		t.Fatal(err)
	}
	st := &stack{ref: map[string]string{}, arn: map[string]string{}, name: map[string]string{}, admin: moto.Config(moto.Admin)}
	if err := json.Unmarshal(out, &st.tmpl); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st.fx = provision(t, st.admin)
	sqc := sqs.NewFromConfig(st.admin)
	for _, id := range slices.Sorted(maps.Keys(st.tmpl.Resources)) {
		switch st.tmpl.Resources[id].Type {
		case "AWS::DynamoDB::Table":
			field, ok := tableFields[id]
			if !ok {
				t.Fatalf("template table %s has no place in dynamostore.Tables here (tableFields)", id)
			}
			name := *field(&st.fx.tables)
			st.ref[id], st.arn[id] = name, "arn:aws:dynamodb:"+motoRegion+":"+motoAccount+":table/"+name
		case "AWS::SecretsManager::Secret":
			arn := map[string]string{"ProviderKeysSecret": st.fx.providerARN, "SigningKeySecret": st.fx.signingARN}[id]
			if arn == "" {
				t.Fatalf("template secret %s is not created by seedSecrets", id)
			}
			st.ref[id], st.arn[id] = arn, arn
		case "AWS::Events::EventBus":
			st.ref[id], st.arn[id] = st.fx.bus, st.fx.busARN
		case "AWS::SQS::Queue":
			name := testenv.UniqueName(t, id)
			q, err := sqc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
			if err != nil {
				t.Fatal(err)
			}
			attrs, err := sqc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl,
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
			if err != nil {
				t.Fatal(err)
			}
			st.ref[id], st.name[id], st.arn[id] = aws.ToString(q.QueueUrl), name, attrs.Attributes["QueueArn"]
		}
	}
	st.webhookQueue = st.ref["WebhookQueue"]
	return st
}

// resolve evaluates the intrinsics of a transformed template's value against the stack.
func (st *stack) resolve(t *testing.T, v any) any {
	t.Helper()
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = st.resolve(t, e)
		}
		return out
	case map[string]any:
		if r, ok := x["Ref"].(string); ok && len(x) == 1 {
			return st.refValue(t, r)
		}
		if a, ok := x["Fn::GetAtt"].([]any); ok && len(x) == 1 {
			return st.getAtt(t, fmt.Sprint(a[0]), fmt.Sprint(a[1]))
		}
		if s, ok := x["Fn::Sub"]; ok && len(x) == 1 {
			return st.sub(t, s)
		}
		out := map[string]any{}
		for k, e := range x {
			if strings.HasPrefix(k, "Fn::") {
				t.Fatalf("%s is not resolved by this test: %v", k, x)
			}
			out[k] = st.resolve(t, e)
		}
		return out
	}
	return v
}

func (st *stack) refValue(t *testing.T, id string) string {
	t.Helper()
	switch id {
	case "AWS::Partition":
		return "aws"
	case "AWS::AccountId":
		return motoAccount
	case "AWS::Region":
		return motoRegion
	case "AWS::StackName":
		return "functest"
	}
	if v, ok := st.ref[id]; ok {
		return v
	}
	if p, ok := st.tmpl.Parameters[id]; ok {
		return fmt.Sprint(p["Default"])
	}
	t.Fatalf("Ref %s: not a resource this test creates, nor a parameter", id)
	return ""
}

func (st *stack) getAtt(t *testing.T, id, attr string) string {
	t.Helper()
	m := map[string]map[string]string{"Arn": st.arn, "QueueName": st.name}[attr]
	if v, ok := m[id]; ok {
		return v
	}
	t.Fatalf("GetAtt %s.%s: not an attribute this test creates", id, attr)
	return ""
}

var subVar = regexp.MustCompile(`\$\{([A-Za-z0-9:]+)(?:\.([A-Za-z]+))?\}`)

func (st *stack) sub(t *testing.T, v any) string {
	t.Helper()
	text, vars := "", map[string]string{}
	switch x := v.(type) {
	case string:
		text = x
	case []any:
		text = fmt.Sprint(x[0])
		m, _ := x[1].(map[string]any)
		for k, e := range m {
			vars[k] = fmt.Sprint(st.resolve(t, e))
		}
	}
	return subVar.ReplaceAllStringFunc(text, func(s string) string {
		m := subVar.FindStringSubmatch(s)
		if v, ok := vars[m[1]]; ok && m[2] == "" {
			return v
		}
		if m[2] != "" {
			return st.getAtt(t, m[1], m[2])
		}
		return st.refValue(t, m[1])
	})
}

// statement is one IAM policy statement, resolved.
type statement struct {
	Effect   string `json:"Effect"`
	Action   any    `json:"Action"`
	Resource any    `json:"Resource"`
}

func stringList(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

func (s statement) actions() []string   { return stringList(s.Action) }
func (s statement) resources() []string { return stringList(s.Resource) }

// allows reports whether s allows action on resource (IAM's * and ? wildcards; actions ignore case).
func (s statement) allows(action, resource string) bool {
	if s.Effect != "Allow" {
		return false
	}
	match := func(patterns []string, v string, fold bool) bool {
		return slices.ContainsFunc(patterns, func(p string) bool {
			if fold {
				p, v = strings.ToLower(p), strings.ToLower(v)
			}
			// path.Match's * stops at "/": IAM's does not, so match with "/" made plain.
			ok, _ := path.Match(strings.ReplaceAll(p, "/", "\x00"), strings.ReplaceAll(v, "/", "\x00"))
			return ok
		})
	}
	return match(s.actions(), action, true) && match(s.resources(), resource, false)
}

// policy is the function's role's own statements (its inline policies as SAM expands them),
// resolved to the stack. The managed policies SAM adds (CloudWatch Logs, X-Ray) cover no call of
// the code's: the runtime writes the logs.
func (st *stack) policy(t *testing.T, id string) []statement {
	t.Helper()
	role := fmt.Sprint(dig(st.tmpl.Resources[id].Properties, "Role", "Fn::GetAtt", "0"))
	var out []statement
	for _, p := range asAny(st.tmpl.Resources[role].Properties["Policies"]) {
		for _, s := range asAny(dig(p, "PolicyDocument", "Statement")) {
			b, err := json.Marshal(st.resolve(t, s))
			if err != nil {
				t.Fatal(err)
			}
			var stmt statement
			if err := json.Unmarshal(b, &stmt); err != nil {
				t.Fatal(err)
			}
			out = append(out, stmt)
		}
	}
	if len(out) == 0 && id != "JWKSFunction" {
		t.Fatalf("%s's role %q has no statements", id, role)
	}
	return out
}

func asAny(v any) []any { l, _ := v.([]any); return l }

func dig(v any, keys ...string) any {
	for _, k := range keys {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			var i int
			if _, err := fmt.Sscan(k, &i); err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// motoPolicy is the policy document moto enforces for a function's statements: moto matches a
// Resource against "*" except for SQS queues, so other statements name "*" there (iamProxy checks
// DynamoDB's resources itself); and moto wrongly requires actions AWS does not have or does not
// check — dynamodb:TransactWriteItems (AWS authorizes each item by its own action) and
// sqs:SendMessageBatch (authorized as sqs:SendMessage) — so those are added, for moto only.
func motoPolicy(stmts []statement) string {
	var out []statement
	writes := false
	for _, s := range stmts {
		sqsOnly := !slices.ContainsFunc(s.actions(), func(a string) bool { return !strings.HasPrefix(a, "sqs:") })
		if !sqsOnly {
			s.Resource = "*"
		}
		out = append(out, s)
		for _, a := range s.actions() {
			switch a {
			case "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem":
				writes = true
			case "sqs:SendMessage":
				out = append(out, statement{Effect: "Allow", Action: "sqs:SendMessageBatch", Resource: s.Resource})
			}
		}
	}
	if writes {
		out = append(out, statement{Effect: "Allow", Action: "dynamodb:TransactWriteItems", Resource: "*"})
	}
	if len(out) == 0 { // IAM refuses an empty policy; this one allows nothing
		out = append(out, statement{Effect: "Allow", Action: "none:None", Resource: "*"})
	}
	b, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": out})
	return string(b)
}

// streams reports whether the function answers through API Gateway's streaming integration.
func (st *stack) streams(id string) bool {
	b, _ := json.Marshal(st.tmpl.Resources["Api"].Properties["Body"])
	return strings.Contains(string(b), "${"+id+".Arn}/response-streaming-invocations")
}

// start runs the function's binary as the template deploys it: its template environment resolved
// to the stack, credentials holding only policy, every AWS call through proxy.
func (st *stack) start(t *testing.T, moto *testenv.IAMMoto, proxy *iamProxy, bin, id string, policy []statement) *testenv.Lambda {
	t.Helper()
	creds := moto.User(t, testenv.UniqueName(t, "fn"), motoPolicy(policy))
	proxy.grant(creds.AccessKeyID, policy)
	vars, _ := dig(st.tmpl.Resources[id].Properties, "Environment", "Variables").(map[string]any)
	var env []string
	for k, v := range vars {
		env = append(env, k+"="+fmt.Sprint(st.resolve(t, v)))
	}
	sort.Strings(env)
	env = append(env, awsEnv(creds, proxy.url)...)
	env = append(env,
		"SECUREAI_DEMO=true",                   // the demo models: no provider is called
		"SECUREAI_WEBHOOKS_ALLOW_PRIVATE=true", // the test's receiver is on loopback
		"SECUREAI_REQUEST_STATS_FLUSH=1ms",     // every answer writes the request counts: on the function's own policy
	)
	return testenv.StartLambda(t, bin, env...)
}

// checkLimitRefusal sends the plain sample twice with a key allowed one request a minute: the
// second is refused 429, and neither is denied a call.
func (st *stack) checkLimitRefusal(t *testing.T, invoke func(*testing.T, []byte) response, event []byte) {
	secret := apikey.NewSecret()
	hash, err := apikey.Hash(secret)
	if err != nil {
		t.Fatal(err)
	}
	key := &apikey.Key{ID: apikey.NewID(), Hash: hash, Prefix: apikey.Prefix(secret), Name: "limited",
		CreatedAt: time.Now().UTC(), RateLimit: apikey.RateLimit{RequestsPerMinute: 1}}
	if err := st.fx.store.CreateKey(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	ev := withKey(t, event, secret)
	if r := invoke(t, ev); r.status != http.StatusOK {
		t.Fatalf("the key's first request: %d %s", r.status, r.body)
	}
	if r := invoke(t, ev); r.status != http.StatusTooManyRequests {
		t.Fatalf("the key's second request in its minute: %d %s, want 429", r.status, r.body)
	}
}

// checkWebhookDelivery runs the dispatcher over its sample event, with an endpoint subscribed to
// it: the fan-out queues one delivery, whose attempt then reaches the endpoint.
func (st *stack) checkWebhookDelivery(t *testing.T, l *testenv.Lambda, sample []byte) {
	ctx := context.Background()
	var mu sync.Mutex
	var posted int
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		posted++
		mu.Unlock()
	}))
	defer receiver.Close()
	u, evs := receiver.URL, []string{"api:model_failover"}
	ep, err := webhook.Create(ctx, webhook.Input{URL: &u, Events: &evs}, webhook.NewGuard(webhook.ReachPrivate), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.fx.store.CreateEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	invokeBatch(t, l, sample)
	sqc := sqs.NewFromConfig(st.admin)
	msgs, err := sqc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(st.webhookQueue), MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
	if err != nil || len(msgs.Messages) != 1 {
		t.Fatalf("the webhook queue holds %d messages (%v), want the one delivery\n%s", len(msgs.Messages), err, l.Output())
	}
	m := msgs.Messages[0]
	batch, _ := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), EventSource: "aws:sqs"}}})
	invokeBatch(t, l, batch)
	mu.Lock()
	defer mu.Unlock()
	if posted != 1 {
		t.Fatalf("the endpoint received %d deliveries, want 1\n%s", posted, l.Output())
	}
}

// iamProxy stands between the functions and moto. It authorizes each DynamoDB call against the
// calling function's policy by resource ARN, as AWS does and moto does not, and answers a denial
// (its own, or moto's XML one to a JSON-protocol call) as AWS's JSON services do.
type iamProxy struct {
	url      string
	mu       sync.Mutex
	policies map[string][]statement // by access key id; calls by other keys (the test's) pass
	denied   []string
}

func newIAMProxy(t *testing.T, target string) *iamProxy {
	p := &iamProxy{policies: map[string][]statement{}}
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		target := resp.Request.Header.Get("X-Amz-Target")
		if resp.StatusCode != http.StatusForbidden || target == "" {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		msg := string(b)
		if m := regexp.MustCompile(`<Message>([^<]*)</Message>`).FindStringSubmatch(msg); m != nil {
			msg = m[1]
		}
		p.deny(target + ": " + msg)
		body := denialBody(msg)
		resp.StatusCode, resp.Status = http.StatusBadRequest, "400 Bad Request"
		resp.Header.Set("Content-Type", "application/x-amz-json-1.0")
		resp.Header.Set("X-Amzn-ErrorType", "AccessDeniedException")
		resp.Header.Set("X-Amz-Crc32", crc(body))
		resp.Header.Del("Content-Length")
		resp.ContentLength = int64(len(body))
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		if op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810."); ok {
			if msg := p.authorizeDynamoDB(accessKey(r), op, b); msg != "" {
				p.deny(msg)
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				w.Header().Set("X-Amzn-ErrorType", "AccessDeniedException")
				body := denialBody(msg)
				w.Header().Set("X-Amz-Crc32", crc(body))
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write(body)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// crc is DynamoDB's X-Amz-Crc32 of a body, which its SDK checks.
func crc(body []byte) string { return strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10) }

func denialBody(msg string) []byte {
	b, _ := json.Marshal(map[string]string{"__type": "AccessDeniedException", "message": msg})
	return b
}

var credentialKey = regexp.MustCompile(`Credential=([^/]+)/`)

func accessKey(r *http.Request) string {
	if m := credentialKey.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		return m[1]
	}
	return ""
}

func (p *iamProxy) grant(key string, policy []statement) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.policies[key] = policy
}

func (p *iamProxy) deny(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.denied = append(p.denied, msg)
}

func (p *iamProxy) denials() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.denied)
}

func (p *iamProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.denied = nil
}

// authorizeDynamoDB returns why the call op with body is denied to the holder of key, "" when it
// is allowed (or key is not a function's).
func (p *iamProxy) authorizeDynamoDB(key, op string, body []byte) string {
	p.mu.Lock()
	policy, ok := p.policies[key]
	p.mu.Unlock()
	if !ok {
		return ""
	}
	var in struct {
		TableName     string
		IndexName     string
		RequestItems  map[string]json.RawMessage
		TransactItems []map[string]struct{ TableName string }
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return "unreadable DynamoDB " + op + " request: " + err.Error()
	}
	type check struct{ action, table, index string }
	var checks []check
	switch op {
	case "BatchGetItem", "BatchWriteItem":
		for table := range in.RequestItems {
			checks = append(checks, check{op, table, ""})
		}
	case "TransactWriteItems", "TransactGetItems":
		// AWS authorizes each item by its own action.
		actions := map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}
		for _, item := range in.TransactItems {
			for kind, v := range item {
				checks = append(checks, check{actions[kind], v.TableName, ""})
			}
		}
	default:
		checks = append(checks, check{op, in.TableName, in.IndexName})
	}
	for _, c := range checks {
		arn := "arn:aws:dynamodb:" + motoRegion + ":" + motoAccount + ":table/" + c.table
		if c.index != "" {
			arn += "/index/" + c.index
		}
		if !slices.ContainsFunc(policy, func(s statement) bool { return s.allows("dynamodb:"+c.action, arn) }) {
			return fmt.Sprintf("User %s is not authorized to perform: dynamodb:%s on resource: %s", key, c.action, arn)
		}
	}
	return ""
}
