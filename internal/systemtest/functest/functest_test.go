package functest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/openapitest"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// TestMain stops the shared moto_server when the tests end.
func TestMain(m *testing.M) { testenv.Main(m) }

// eventKey is the fixed test key every events/*.json carries (see events/README.md); the bad-key
// events carry another well-formed key that no store holds.
const eventKey = "sk-7e577e577e577e577e577e577e577e577e577e577e577e577e577e577e577e57"

// streamSeparator ends the HTTP-integration prelude of a streaming function's output.
const streamSeparator = "\x00\x00\x00\x00\x00\x00\x00\x00"

// The events each function must have, by the suffix of events/<function>-<kind>.json.
var (
	chatKinds     = []string{"plain", "failover", "streaming", "bad-key", "bad-body"}
	chatFunctions = []string{"openai-chat", "classic-chat", "messages", "responses"}
	wantedKinds   = map[string][]string{"openai-chat": append(slices.Clip(chatKinds), "hedge"), "classic-chat": chatKinds,
		"messages": append(slices.Clip(chatKinds), "count-tokens"), "responses": chatKinds, "models": {"plain", "model", "bad-key"},
		"policy-check": {"plain", "bad-key"}, "usage": {"plain", "bad-key"}, "jwks": {"plain", "openapi"},
		"receipts": {"not-found", "bad-key"}, "admin": {"bad-key", "not-admin"}, "console": {"page", "not-admin"}}
)

// response is a function's answer, whichever way it came back.
type response struct {
	status int
	header http.Header
	body   []byte
}

// TestFunctionsAnswerEveryEvent builds every functions/* binary as it is deployed (lambda.norpc,
// static, for the host), runs each under the Runtime Interface Emulator against DynamoDB and
// Secrets Manager on moto, and checks its answer to each of its events/*.json. Invokes run one at
// a time: the emulator crashes on concurrent ones.
func TestFunctionsAnswerEveryEvent(t *testing.T) {
	root := testenv.RepoRoot(t)
	functions := functionNames(t, root)
	files := eventFiles(t, root, functions)

	built := make(chan map[string]string, 1)
	go func() { built <- buildAll(t, root, functions) }() // linking is the slow part; overlap it with moto
	fx := awsFixture(t)
	env := fx.env
	bins := <-built
	if bins == nil {
		t.FailNow() // buildAll reported why
	}

	var bundleID string // of openai-chat's plain answer, for the receipts function
	for _, fn := range functions {
		t.Run(fn, func(t *testing.T) {
			main, err := os.ReadFile(filepath.Join(root, "functions", fn, "main.go"))
			if err != nil {
				t.Fatal(err)
			}
			streaming := bytes.Contains(main, []byte("awslambda.StartStreaming("))
			lambda := testenv.StartLambda(t, bins[fn], env...)
			invoke := func(t *testing.T, ev []byte) response {
				t.Helper()
				out := lambda.Invoke(t, ev)
				if streaming {
					return decodeStreamed(t, out)
				}
				return decodeBuffered(t, out)
			}
			for _, kind := range wantedKinds[fn] {
				t.Run(kind, func(t *testing.T) {
					before := fx.admitted(t)
					resp := invoke(t, files[fn][kind])
					// A chat request is counted against its key's limits once it is admitted
					// (its attempts about to start); one refused before that is not, nor is a
					// token count, which calls no model.
					want := 0
					if slices.Contains(chatFunctions, fn) && !strings.HasPrefix(kind, "bad-") && kind != "count-tokens" {
						want = 1
					}
					if got := fx.admitted(t) - before; got != want {
						t.Errorf("%s %s counted %d requests against the key's limits, want %d", fn, kind, got, want)
					}
					if id := resp.header.Get("X-Request-Id"); id == "" {
						t.Errorf("no X-Request-Id header in %v", resp.header)
					}
					checkContract(t, files[fn][kind], resp) // first: check may edit resp's headers
					check(t, fn, kind, resp)
					if fn == "openai-chat" && kind == "plain" {
						bundleID, _ = lookup(jsonBody(t, resp, http.StatusOK), "secureai", "smltp_bundle_id").(string)
					}
					// The failover was published to the bus (EventBridge on moto) before the
					// invocation ended, and nothing else was.
					got := fx.events.types(t)
					if fn == "console" && kind == "not-admin" && slices.Equal(got, []string{"admin:console_action"}) {
						got = nil // a refused sign-in is audited (issue 34 item 5)
					}
					if want := kind == "failover" || kind == "hedge"; want != slices.Equal(got, []string{"api:model_failover"}) || !want && len(got) != 0 {
						t.Errorf("events on the bus after %s %s: %v", fn, kind, got)
					}
					if t.Failed() {
						t.Logf("function output so far:\n%s", lambda.Output())
					}
				})
			}
			if slices.Contains(chatFunctions, fn) {
				for _, kind := range []string{"plain", "streaming"} {
					t.Run("idempotent-replay-"+kind, func(t *testing.T) {
						checkReplay(t, invoke, files[fn][kind], fx)
					})
				}
			}
			if fn == "admin" {
				t.Run("admin-key", func(t *testing.T) {
					checkAdmin(t, invoke, files[fn]["not-admin"], fx)
				})
			}
			if fn == "console" {
				t.Run("admin-session", func(t *testing.T) {
					checkConsole(t, invoke, files[fn]["not-admin"], fx)
				})
			}
			if fn == "receipts" {
				// openai-chat ran first (functions run in name order): its served request's receipt,
				// put by the chat function, is read back by this one.
				t.Run("served-request", func(t *testing.T) {
					checkReceipt(t, invoke, files[fn]["not-found"], bundleID)
				})
			}
		})
	}
}

// functionNames lists functions/*, each of which must have its events.
func functionNames(t *testing.T, root string) []string {
	entries, err := os.ReadDir(filepath.Join(root, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	// consumers_test.go and refund_test.go run those
	names = slices.DeleteFunc(names, func(n string) bool { return consumerKinds[n] != nil || n == "refund-sweep" })
	for _, n := range names {
		if _, ok := wantedKinds[n]; !ok {
			t.Errorf("functions/%s has no expectations here: add its events (events/%s-*.json) and their checks", n, n)
		}
	}
	if len(names) == 0 {
		t.Fatal("no functions under functions/")
	}
	return names
}

// eventFiles reads every events/*.json, refusing files that belong to no function or kind, so an
// event is never added without being run.
func eventFiles(t *testing.T, root string, functions []string) map[string]map[string][]byte {
	paths, err := filepath.Glob(filepath.Join(root, "events", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]map[string][]byte{}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		if name == "env" || isConsumerEvent(name) { // sam's --env-vars file; SQS events of consumers_test.go
			continue
		}
		fn, kind := "", ""
		for _, f := range functions {
			if k, ok := strings.CutPrefix(name, f+"-"); ok && slices.Contains(wantedKinds[f], k) {
				fn, kind = f, k
			}
		}
		if fn == "" {
			t.Errorf("events/%s.json names no function and kind this test knows (%v)", name, wantedKinds)
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var ev events.APIGatewayProxyRequest
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Errorf("events/%s.json is not an API Gateway proxy event: %v", name, err)
		}
		if files[fn] == nil {
			files[fn] = map[string][]byte{}
		}
		files[fn][kind] = b
	}
	for _, fn := range functions {
		for _, kind := range wantedKinds[fn] {
			if files[fn][kind] == nil {
				t.Errorf("events/%s-%s.json is missing", fn, kind)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return files
}

// buildAll builds the functions in parallel for the host; nil if any build failed.
func buildAll(t *testing.T, root string, functions []string) map[string]string {
	dir := t.TempDir()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		bins = map[string]string{}
	)
	for _, fn := range functions {
		wg.Go(func() {
			out := filepath.Join(dir, fn, "bootstrap")
			// As deployed (lambda.norpc, static, stripped), but without -trimpath, so the
			// packages compiled by go vet and the other tests come from the build cache.
			cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-ldflags=-s -w", "-o", out, "./functions/"+fn)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("go build ./functions/%s: %v\n%s", fn, err, b)
				return
			}
			mu.Lock()
			bins[fn] = out
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(bins) != len(functions) {
		return nil
	}
	return bins
}

// fixture is the functions' AWS resources on moto — the tables, the two secrets, the event bus
// and the queue where every event put on it lands, the keys — and their environment.
type fixture struct {
	env         []string
	tables      dynamostore.Tables
	providerARN string // the provider keys' secret
	signingARN  string // the signing keyset's secret
	bus, busARN string
	events      *eventQueue
	adminKey    string // the secret of an admin key
	store       *dynamostore.Store
	eventKey    *apikey.Key // the key events/*.json carry
}

// admitted returns how many requests of the events' key the ledger has counted this month.
func (fx fixture) admitted(t *testing.T) int {
	t.Helper()
	ws := limits.Windows(fx.eventKey, time.Now())
	counts, err := fx.store.RequestCounts(context.Background(), fx.eventKey.ID, ws)
	if err != nil {
		t.Fatal(err)
	}
	return counts[limits.Month]
}

// eventQueue receives what a rule on the bus (every gateway event) delivers.
type eventQueue struct {
	sqs *sqs.Client
	url string
}

// busQueue routes every gateway event on bus to a new queue.
func busQueue(t *testing.T, cfg aws.Config, bus string) *eventQueue {
	ctx := context.Background()
	sqc, ebc := sqs.NewFromConfig(cfg), eventbridge.NewFromConfig(cfg)
	q, err := sqc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(testenv.UniqueName(t, "bus-events"))})
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := sqc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	rule := testenv.UniqueName(t, "all-events")
	if _, err := ebc.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(rule), EventBusName: aws.String(bus),
		EventPattern: aws.String(`{"source":["secureai.gateway"]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ebc.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(rule), EventBusName: aws.String(bus),
		Targets: []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)])}}}); err != nil {
		t.Fatal(err)
	}
	return &eventQueue{sqs: sqc, url: aws.ToString(q.QueueUrl)}
}

// types drains the queue, without waiting, and returns the detail-types that have arrived: moto
// routes an event to the queue within PutEvents, so what a function published before its
// response ended is there when the invocation returns.
func (q *eventQueue) types(t *testing.T) []string {
	t.Helper()
	var types []string
	for {
		out, err := q.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.url), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return types
		}
		for _, m := range out.Messages {
			var env struct {
				DetailType string `json:"detail-type"`
			}
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &env); err != nil {
				t.Errorf("bus message %q is no EventBridge envelope: %v", aws.ToString(m.Body), err)
			}
			types = append(types, env.DetailType)
			if _, err := q.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// awsFixture creates the functions' resources on moto and returns them with the functions'
// environment, which names them.
func awsFixture(t *testing.T) fixture {
	endpoint := testenv.Moto(t)
	fx := provision(t, testenv.AWSConfig(t, endpoint))
	tables := fx.tables
	fx.env = append(awsEnv(motoCreds, endpoint),
		"SECUREAI_TABLE_API_KEYS="+tables.APIKeys, "SECUREAI_TABLE_IDEMPOTENCY="+tables.Idempotency,
		"SECUREAI_TABLE_LIMITS="+tables.Limits, "SECUREAI_TABLE_USERS="+tables.Users,
		"SECUREAI_TABLE_RECEIPTS="+tables.Receipts, "SECUREAI_TABLE_CIRCUIT_BREAKERS="+tables.CircuitBreakers,
		"SECUREAI_TABLE_WEBHOOKS="+tables.Webhooks, "SECUREAI_TABLE_WEBHOOK_ATTEMPTS="+tables.WebhookAttempts,
		"SECUREAI_TABLE_AUDIT="+tables.Audit, "SECUREAI_TABLE_PROVIDER_HEALTH="+tables.ProviderHealth,
		"SECUREAI_PROVIDER_SECRET_ARN="+fx.providerARN,
		"SECUREAI_SIGNING_SECRET_ARN="+fx.signingARN, "SECUREAI_EVENT_BUS="+fx.busARN,
		"SECUREAI_DEMO=true", "SECUREAI_CONFIG=",
	)
	return fx
}

// provision creates, with cfg's credentials, the functions' resources: every table of
// dynamostore's schema, the secrets, the event bus with a queue receiving all it carries, and the
// keys. Both emulator tests run on it: on plain moto (awsFixture), and on the IAM-enforcing one
// (newStack).
func provision(t *testing.T, cfg aws.Config) (fx fixture) {
	ctx := context.Background()
	db := dynamodb.NewFromConfig(cfg)
	fx.tables = dynamostore.Tables{APIKeys: testenv.UniqueName(t, "keys"), Idempotency: testenv.UniqueName(t, "idem"),
		Limits: testenv.UniqueName(t, "limits"), Users: testenv.UniqueName(t, "users"), Receipts: testenv.UniqueName(t, "receipts"),
		CircuitBreakers: testenv.UniqueName(t, "breakers"), Webhooks: testenv.UniqueName(t, "wh"),
		WebhookAttempts: testenv.UniqueName(t, "wha"), Audit: testenv.UniqueName(t, "audit"),
		ProviderHealth: testenv.UniqueName(t, "health")}
	if err := dynamostore.CreateTables(ctx, db, fx.tables); err != nil {
		t.Fatal(err)
	}
	fx.store = dynamostore.New(db, fx.tables)
	fx.eventKey, fx.adminKey = seedKeys(t, fx.store)
	fx.providerARN, fx.signingARN = seedSecrets(t, cfg)
	fx.bus = testenv.UniqueName(t, "events")
	bus, err := eventbridge.NewFromConfig(cfg).CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(fx.bus)})
	if err != nil {
		t.Fatal(err)
	}
	fx.busARN = aws.ToString(bus.EventBusArn)
	fx.events = busQueue(t, cfg, fx.bus)
	return fx
}

// awsEnv is the AWS part of every function's environment: the emulator's region and the
// credentials given, every AWS call to endpoint, and nothing from the developer's environment (a
// profile, real credentials) that could reach a real account; no X-Ray, and streaming as in the
// cloud (not SAM local's buffered mode).
func awsEnv(creds aws.Credentials, endpoint string) []string {
	return []string{
		"AWS_REGION=" + motoRegion, "AWS_DEFAULT_REGION=" + motoRegion,
		"AWS_ACCESS_KEY_ID=" + creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + creds.SecretAccessKey, "AWS_SESSION_TOKEN=",
		"AWS_PROFILE=", "AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_ENDPOINT_URL=" + endpoint, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=",
		"AWS_XRAY_SDK_DISABLED=true", "SECUREAI_TRACES=off", "AWS_SAM_LOCAL=",
	}
}

// motoCreds are the credentials plain moto takes (any).
var motoCreds = aws.Credentials{AccessKeyID: "testing", SecretAccessKey: "testing"}

// seedKeys creates, in store's keys table, the key events/*.json carry and an admin key made for
// this run only (the samples carry none); it returns the first and the second's secret.
func seedKeys(t *testing.T, store *dynamostore.Store) (*apikey.Key, string) {
	ctx := context.Background()
	hash, err := apikey.Hash(eventKey)
	if err != nil {
		t.Fatal(err)
	}
	key := &apikey.Key{ID: "key_events", Hash: hash, Prefix: apikey.Prefix(eventKey), Name: "events", CreatedAt: time.Now().UTC()}
	if err := store.CreateKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	admin := apikey.NewSecret()
	adminHash, err := apikey.Hash(admin)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CreateKey(ctx, &apikey.Key{ID: apikey.NewID(), Hash: adminHash, Admin: true,
		Prefix: apikey.Prefix(admin), Name: "functest admin", CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	return key, admin
}

// seedSecrets creates the provider keys' secret and the signing keyset's, as an operator leaves
// them after the first deploy, and returns their ARNs. The demo models need no credential, but
// the functions must still read the secret on their first request: a wrong ARN or an unreadable
// secret fails every event.
func seedSecrets(t *testing.T, cfg aws.Config) (provider, signer string) {
	ctx := context.Background()
	sm := secretsmanager.NewFromConfig(cfg)
	secret, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name:         aws.String(testenv.UniqueName(t, "provider-keys")),
		SecretString: aws.String(`{"OPENAI_API_KEY":"sk-functest-not-a-real-key"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	keyset, err := signing.NewKeyset(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(keyset)
	if err != nil {
		t.Fatal(err)
	}
	signingSecret, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(testenv.UniqueName(t, "signing-keys")), SecretString: aws.String(string(raw)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(secret.ARN), aws.ToString(signingSecret.ARN)
}

// decodeBuffered reads a buffered function's output: one APIGatewayProxyResponse document.
func decodeBuffered(t *testing.T, out []byte) response {
	t.Helper()
	var r events.APIGatewayProxyResponse
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("output is not an APIGatewayProxyResponse: %v\n%q", err, out)
	}
	if r.IsBase64Encoded {
		t.Errorf("isBase64Encoded = true for a JSON body")
	}
	h := http.Header{}
	for k, v := range r.Headers {
		h.Add(k, v)
	}
	for k, vs := range r.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return response{status: r.StatusCode, header: h, body: []byte(r.Body)}
}

// decodeStreamed reads a streaming function's output as the emulator returns it, fully buffered:
// the HTTP-integration prelude (JSON with the status and headers), eight NUL bytes, the body.
func decodeStreamed(t *testing.T, out []byte) response {
	t.Helper()
	prelude, body, ok := bytes.Cut(out, []byte(streamSeparator))
	if !ok {
		t.Fatalf("streaming output has no prelude separator (8 NUL bytes):\n%q", out)
	}
	var p struct {
		StatusCode        int                 `json:"statusCode"`
		Headers           map[string]string   `json:"headers"`
		MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
		Cookies           []string            `json:"cookies"`
	}
	dec := json.NewDecoder(bytes.NewReader(prelude))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || dec.More() {
		t.Fatalf("prelude is not one JSON object of statusCode/headers/multiValueHeaders/cookies: %v\n%q", err, prelude)
	}
	if p.StatusCode == 0 {
		t.Errorf("prelude has no statusCode: %s", prelude)
	}
	h := http.Header{}
	for k, v := range p.Headers {
		h.Add(k, v)
	}
	for k, vs := range p.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return response{status: p.StatusCode, header: h, body: body}
}

// checkContract validates an API Gateway event and the function's answer against
// docs/openapi.yaml, as the local test gateways validate theirs, and a stream's every frame
// against the schema the document gives it.
func checkContract(t *testing.T, event []byte, r response) {
	t.Helper()
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			t.Fatal(err)
		}
	}
	req := httptest.NewRequest(ev.HTTPMethod, "http://gateway"+ev.Path, bytes.NewReader(body))
	req.URL.RawQuery = url.Values(ev.MultiValueQueryStringParameters).Encode()
	req.Header = http.Header{}
	for k, vs := range ev.MultiValueHeaders {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	openapitest.Check(t, req, body, r.status, r.header, r.body)
	if r.status == http.StatusOK && strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		openapitest.CheckEvents(t, ev.HTTPMethod, ev.Path, r.body)
	}
}

func check(t *testing.T, fn, kind string, r response) {
	t.Helper()
	switch fn + "/" + kind {
	case "openai-chat/plain":
		v := jsonBody(t, r, http.StatusOK)
		expectString(t, v, "demo/ok", "secureai", "served_model")
		expectString(t, v, "chat.completion", "object")
		expectNonEmpty(t, v, "choices", 0, "message", "content")
		if fo := lookup(v, "secureai", "failover"); fo != nil {
			t.Errorf("a plain answer from demo/ok reports a failover: %v", fo)
		}
	case "openai-chat/failover":
		v := jsonBody(t, r, http.StatusOK)
		expectString(t, v, "demo/ok", "secureai", "served_model")
		expectString(t, v, "demo/error-500", "secureai", "requested_model")
		expectFailover(t, lookup(v, "secureai", "failover"))
	case "openai-chat/hedge":
		// The slow model is still silent when the hedge starts; demo/ok answers first.
		v := jsonBody(t, r, http.StatusOK)
		expectString(t, v, "demo/ok", "secureai", "served_model")
		attempts, _ := lookup(v, "secureai", "failover", "attempts").([]any)
		if len(attempts) != 2 {
			t.Fatalf("hedge report: %v", lookup(v, "secureai", "failover"))
		}
		expectString(t, attempts[0], "cancelled", "status")
		expectString(t, attempts[0], "hedge_lost", "reason")
		expectString(t, attempts[1], "served", "status")
	case "openai-chat/streaming":
		frames := sseFrames(t, r)
		if len(frames) == 0 {
			return
		}
		expectString(t, frames[0], "demo/ok", "secureai", "served_model")
		text := ""
		for _, f := range frames {
			expectString(t, f, "chat.completion.chunk", "object")
			if s, ok := lookup(f, "choices", 0, "delta", "content").(string); ok {
				text += s
			}
		}
		if text == "" {
			t.Error("the stream carried no content")
		}
	case "openai-chat/bad-key", "models/bad-key":
		v := jsonBody(t, r, http.StatusUnauthorized)
		expectString(t, v, "invalid_api_key", "error", "code")
		expectString(t, v, "invalid_request_error", "error", "type")
	case "openai-chat/bad-body":
		v := jsonBody(t, r, http.StatusBadRequest)
		expectString(t, v, "messages", "error", "param")
		expectString(t, v, "invalid_request_error", "error", "type")

	case "messages/plain":
		// Claude Code's request (x-api-key, ?beta=true): Anthropic's message object.
		v := jsonBody(t, r, http.StatusOK)
		expectAnthropicMessage(t, v)
		expectString(t, v, "demo/ok", "model")
		expectString(t, v, "end_turn", "stop_reason")
		expectString(t, v, "demo/ok", "secureai", "served_model")
		if fo := lookup(v, "secureai", "failover"); fo != nil {
			t.Errorf("a plain answer from demo/ok reports a failover: %v", fo)
		}
		if got := r.header.Get("X-SecureAI-Failover"); got != "false" {
			t.Errorf("X-SecureAI-Failover %q, want false", got)
		}
	case "messages/failover":
		// anthropic-python's request (Authorization: Bearer) with fallback_models.
		v := jsonBody(t, r, http.StatusOK)
		expectAnthropicMessage(t, v)
		expectString(t, v, "demo/ok", "secureai", "served_model")
		expectString(t, v, "demo/error-500", "secureai", "requested_model")
		expectFailover(t, lookup(v, "secureai", "failover"))
		if r.header.Get("X-SecureAI-Failover") != "true" || r.header.Get("X-SecureAI-Served-Model") != "demo/ok" || r.header.Get("X-SecureAI-Attempts") != "2" {
			t.Errorf("X-SecureAI-* headers %v, want a failover to demo/ok after 2 attempts", r.header)
		}
	case "messages/streaming":
		evs := namedEvents(t, r)
		if len(evs) == 0 {
			return
		}
		expectString(t, evs[0].data, "demo/ok", "message", "secureai", "served_model")
		expectString(t, evs[0].data, "assistant", "message", "role")
		var names []string
		text := ""
		for _, e := range evs {
			names = append(names, e.name)
			if s, ok := lookup(e.data, "delta", "text").(string); ok && e.name == "content_block_delta" {
				text += s
			}
		}
		want := []string{"message_start", "ping", "content_block_start"}
		if len(names) < 6 || !slices.Equal(names[:3], want) || names[len(names)-3] != "content_block_stop" ||
			names[len(names)-2] != "message_delta" || names[len(names)-1] != "message_stop" {
			t.Errorf("events %v, want message_start, ping, a content block's start, deltas and stop, message_delta, message_stop", names)
		}
		expectString(t, evs[2].data, "text", "content_block", "type")
		expectString(t, evs[len(evs)-2].data, "end_turn", "delta", "stop_reason")
		if text == "" {
			t.Error("the stream carried no text")
		}
	case "messages/bad-key":
		// Claude Code retries a 401 unless told not to.
		v := jsonBody(t, r, http.StatusUnauthorized)
		expectString(t, v, "error", "type")
		expectString(t, v, "authentication_error", "error", "type")
		if got := r.header.Get("X-Should-Retry"); got != "false" {
			t.Errorf("X-Should-Retry %q, want false", got)
		}
	case "messages/bad-body":
		v := jsonBody(t, r, http.StatusBadRequest)
		expectString(t, v, "invalid_request_error", "error", "type")
		if msg, _ := lookup(v, "error", "message").(string); !strings.Contains(msg, "max_tokens") {
			t.Errorf("message %q does not name the missing max_tokens", msg)
		}
	case "messages/count-tokens":
		v := jsonBody(t, r, http.StatusOK)
		if n, _ := lookup(v, "input_tokens").(float64); n < 1 {
			t.Errorf("input_tokens = %v, want a positive estimate", lookup(v, "input_tokens"))
		}

	case "responses/plain":
		// openai-python's responses.create with a string input: the Response object.
		v := jsonBody(t, r, http.StatusOK)
		expectResponseObject(t, v)
		expectString(t, v, "demo/ok", "secureai", "served_model")
		if fo := lookup(v, "secureai", "failover"); fo != nil {
			t.Errorf("a plain answer from demo/ok reports a failover: %v", fo)
		}
	case "responses/failover":
		v := jsonBody(t, r, http.StatusOK)
		expectResponseObject(t, v)
		expectString(t, v, "demo/ok", "secureai", "served_model")
		expectString(t, v, "demo/error-500", "secureai", "requested_model")
		expectFailover(t, lookup(v, "secureai", "failover"))
		if r.header.Get("X-SecureAI-Failover") != "true" || r.header.Get("X-SecureAI-Served-Model") != "demo/ok" {
			t.Errorf("X-SecureAI-* headers %v, want a failover to demo/ok", r.header)
		}
	case "responses/streaming":
		// Codex's request: Codex builds its answer from the item events and takes a stream
		// without response.completed for a disconnect.
		evs := namedEvents(t, r)
		if len(evs) == 0 {
			return
		}
		var names []string
		text := ""
		for i, e := range evs {
			names = append(names, e.name)
			if n, _ := lookup(e.data, "sequence_number").(float64); int(n) != i {
				t.Errorf("event %d (%s) has sequence_number %v", i, e.name, lookup(e.data, "sequence_number"))
			}
			if s, ok := lookup(e.data, "delta").(string); ok && e.name == "response.output_text.delta" {
				text += s
			}
		}
		want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
		end := []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
		if len(names) < len(want)+len(end)+1 || !slices.Equal(names[:len(want)], want) || !slices.Equal(names[len(names)-len(end):], end) {
			t.Errorf("events %v, want %v, text deltas, then %v", names, want, end)
		}
		expectString(t, evs[0].data, "demo/ok", "response", "secureai", "served_model")
		done := evs[len(evs)-1].data
		expectString(t, done, "completed", "response", "status")
		expectString(t, done, "demo/ok", "response", "secureai", "served_model")
		expectString(t, done, text, "response", "output", 0, "content", 0, "text")
		if text == "" {
			t.Error("the stream carried no text")
		}
	case "responses/bad-key":
		v := jsonBody(t, r, http.StatusUnauthorized)
		expectString(t, v, "invalid_api_key", "error", "code")
		if got := r.header.Get("X-Should-Retry"); got != "false" {
			t.Errorf("X-Should-Retry %q, want false", got)
		}
	case "responses/bad-body":
		// The gateway stores no responses: a continuation by id is a clear 400.
		v := jsonBody(t, r, http.StatusBadRequest)
		expectString(t, v, "previous_response_id", "error", "param")
		expectString(t, v, "invalid_request_error", "error", "type")

	case "classic-chat/plain":
		v := jsonBody(t, r, http.StatusOK)
		expectTrue(t, v, "success")
		expectString(t, v, "demo/ok", "metadata", "served_model")
		expectString(t, v, "Zero-Knowledge", "metadata", "index_used")
		expectNonEmpty(t, v, "choices", 0, "message", "content")
	case "classic-chat/failover":
		v := jsonBody(t, r, http.StatusOK)
		expectTrue(t, v, "success")
		expectString(t, v, "demo/ok", "metadata", "served_model")
		expectString(t, v, "demo/error-500", "metadata", "requested_model")
		expectFailover(t, lookup(v, "metadata", "failover"))
	case "classic-chat/streaming":
		frames := sseFrames(t, r)
		if len(frames) == 0 {
			return
		}
		expectString(t, frames[0], "metadata", "type")
		expectString(t, frames[0], "demo/ok", "data", "metadata", "served_model")
		types := map[string]int{}
		for _, f := range frames {
			s, _ := lookup(f, "type").(string)
			types[s]++
		}
		if types["chunk"] == 0 || types["usage"] != 1 || len(types) != 3 {
			t.Errorf("frame types %v, want one metadata, chunks and one usage", types)
		}
	case "classic-chat/bad-key":
		v := classicError(t, r, http.StatusUnauthorized)
		expectString(t, v, "Invalid API key", "error")
	case "classic-chat/bad-body":
		v := classicError(t, r, http.StatusBadRequest)
		if msg, _ := lookup(v, "message").(string); !strings.Contains(msg, "max_tokens") {
			t.Errorf("message %q does not name the bad field max_tokens", msg)
		}

	case "models/plain":
		v := jsonBody(t, r, http.StatusOK)
		expectString(t, v, "list", "object")
		data, _ := lookup(v, "data").([]any)
		var ids []string
		for i := range data {
			if id, ok := lookup(v, "data", i, "id").(string); ok {
				ids = append(ids, id)
			}
		}
		for _, want := range []string{"demo/ok", "demo/error-500"} {
			if !slices.Contains(ids, want) {
				t.Errorf("models %v lack %s", ids, want)
			}
		}

	case "models/model":
		// GET /v1/models/{id+}: API Gateway passes the id's slash on in the path.
		v := jsonBody(t, r, http.StatusOK)
		expectString(t, v, "model", "object")
		expectString(t, v, "demo/ok", "id")

	case "policy-check/plain":
		// The dry run of the failover sample: every check passes, and nothing is called.
		v := jsonBody(t, r, http.StatusOK)
		expectTrue(t, v, "allowed")
	case "policy-check/bad-key", "usage/bad-key", "receipts/bad-key", "admin/bad-key":
		v := classicError(t, r, http.StatusUnauthorized)
		expectString(t, v, "Invalid API key", "error")
	case "usage/plain":
		v := jsonBody(t, r, http.StatusOK)
		expectTrue(t, v, "success")
		if _, ok := lookup(v, "points", "remaining").(float64); !ok {
			t.Errorf("points.remaining = %#v, want a number", lookup(v, "points", "remaining"))
		}
	case "jwks/plain":
		// Public: the sample carries no key.
		if ct := r.header.Get("Content-Type"); ct != "application/jwk-set+json" {
			t.Errorf("Content-Type %q, want application/jwk-set+json", ct)
		}
		r.header.Set("Content-Type", "application/json") // the rest as any JSON answer
		v := jsonBody(t, r, http.StatusOK)
		expectString(t, v, "OKP", "keys", 0, "kty")
		expectString(t, v, "Ed25519", "keys", 0, "crv")
		expectNonEmpty(t, v, "keys", 0, "kid")
		if d := lookup(v, "keys", 0, "d"); d != nil {
			t.Errorf("the JWKS publishes a private key part: d = %v", d)
		}
	case "jwks/openapi":
		// The API description, public, as JSON: the document the local server serves.
		v := jsonBody(t, r, http.StatusOK)
		expectString(t, v, "3.1.0", "openapi")
		if lookup(v, "paths", "/v1/chat/completions", "post") == nil || lookup(v, "paths", "/openapi.json", "get") == nil {
			t.Errorf("the document lacks its routes: paths = %v", lookup(v, "paths"))
		}
	case "receipts/not-found":
		classicError(t, r, http.StatusNotFound)
	case "admin/not-admin":
		v := classicError(t, r, http.StatusForbidden)
		expectString(t, v, "Access denied", "error")
	case "console/page":
		if r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`<script type="module" src="assets/app.js">`)) {
			t.Errorf("GET /console/: %d %.200s", r.status, r.body)
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || r.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET /console/ headers: %v", r.header)
		}
	case "console/not-admin":
		v := classicError(t, r, http.StatusForbidden)
		expectString(t, v, "Not an admin key", "error")
	default:
		t.Fatalf("no check for %s %s", fn, kind)
	}
}

// checkReplay sends a chat request twice under one Idempotency-Key: the second answer must be
// the first, replayed from the DynamoDB idempotency store (gzipped there when over a kilobyte, as
// a stream is), and counted against the key's limits once.
func checkReplay(t *testing.T, invoke func(*testing.T, []byte) response, event []byte, fx fixture) {
	b := withHeader(t, event, "Idempotency-Key", fmt.Sprintf("functest-%d", time.Now().UnixNano()))
	before := fx.admitted(t)
	first := invoke(t, b)
	if first.status != http.StatusOK || first.header.Get(httpapi.ReplayedHeader) != "" {
		t.Fatalf("first request: status %d, %s %q", first.status, httpapi.ReplayedHeader, first.header.Get(httpapi.ReplayedHeader))
	}
	again := invoke(t, b)
	if again.status != http.StatusOK || again.header.Get(httpapi.ReplayedHeader) != "true" {
		t.Fatalf("repeat: status %d, %s %q; want 200 and a replay", again.status, httpapi.ReplayedHeader, again.header.Get(httpapi.ReplayedHeader))
	}
	if got := fx.admitted(t) - before; got != 1 {
		t.Errorf("a request and its replay counted %d against the key's limits, want 1", got)
	}
	if !bytes.Equal(again.body, first.body) || again.header.Get("Content-Type") != first.header.Get("Content-Type") {
		t.Errorf("replayed %q (%s), want the first answer %q (%s)", again.body, again.header.Get("Content-Type"),
			first.body, first.header.Get("Content-Type"))
	}
}

// checkAdmin sends the not-admin sample's GET /admin/api-keys with an admin key (the test key
// is listed), then creates a key through POST /admin/api-keys: 201 with its secret shown once,
// and an admin:api_key_created event on the bus by the time the invocation returns.
func checkAdmin(t *testing.T, invoke func(*testing.T, []byte) response, event []byte, fx fixture) {
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	ev.Headers = maps.Clone(ev.Headers)
	ev.MultiValueHeaders = maps.Clone(ev.MultiValueHeaders)
	ev.Headers["Authorization"] = "Bearer " + fx.adminKey
	ev.MultiValueHeaders["Authorization"] = []string{"Bearer " + fx.adminKey}
	send := func(ev events.APIGatewayProxyRequest) response {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return invoke(t, b)
	}
	list := jsonBody(t, send(ev), http.StatusOK)
	if !strings.Contains(fmt.Sprint(list), "key_events") {
		t.Errorf("the key listing lacks the test key key_events: %v", list)
	}
	// The key's request counts against its limits: a read of the limits table the role allows.
	usage := ev
	usage.Path, usage.PathParameters = "/admin/api-keys/key_events/usage", map[string]string{"proxy": "api-keys/key_events/usage"}
	u := jsonBody(t, send(usage), http.StatusOK)
	expectNonEmpty(t, u, "usage", "daily", "reset_time")

	ev.HTTPMethod, ev.RequestContext.HTTPMethod = "POST", "POST"
	ev.Body = `{"name":"made by functest"}`
	ev.Headers["Content-Type"] = "application/json"
	ev.MultiValueHeaders["Content-Type"] = []string{"application/json"}
	created := jsonBody(t, send(ev), http.StatusCreated)
	expectNonEmpty(t, created, "secret")
	// (with admin:user_updated when the key's user is new)
	if got := fx.events.types(t); !slices.Contains(got, "admin:api_key_created") {
		t.Errorf("events on the bus after creating a key: %v, want admin:api_key_created among them", got)
	}
}

// checkConsole signs in to the console with the fixture's admin key (the not-admin sample's
// shape): the session cookie is Secure (the host is not loopback), HttpOnly and SameSite=Strict,
// and it lists the keys through the console, as the admin function would.
func checkConsole(t *testing.T, invoke func(*testing.T, []byte) response, event []byte, fx fixture) {
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	ev.Body = `{"key":"` + fx.adminKey + `"}`
	send := func(ev events.APIGatewayProxyRequest) response {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return invoke(t, b)
	}
	signedIn := send(ev)
	jsonBody(t, signedIn, http.StatusOK)
	cookie := signedIn.header.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "Secure", "SameSite=Strict", "Max-Age="} {
		if !strings.Contains(cookie, want) {
			t.Errorf("session cookie %q lacks %s", cookie, want)
		}
	}
	value, _, _ := strings.Cut(cookie, ";")
	ev.HTTPMethod, ev.RequestContext.HTTPMethod, ev.Body = "GET", "GET", ""
	ev.Path, ev.PathParameters = "/console/api/admin/api-keys", map[string]string{"proxy": "api/admin/api-keys"}
	ev.Headers = maps.Clone(ev.Headers)
	ev.MultiValueHeaders = maps.Clone(ev.MultiValueHeaders)
	ev.Headers["Cookie"], ev.MultiValueHeaders["Cookie"] = value, []string{value}
	list := jsonBody(t, send(ev), http.StatusOK)
	if !strings.Contains(fmt.Sprint(list), "key_events") {
		t.Errorf("the key listing through the console lacks the test key key_events: %v", list)
	}
	if got := fx.events.types(t); !slices.Contains(got, "admin:console_action") {
		t.Errorf("events on the bus after signing in: %v, want admin:console_action among them", got)
	}
}

// checkReceipt reads the receipt of bundleID (a served request's) through the receipts function,
// with the not-found sample's key and shape.
func checkReceipt(t *testing.T, invoke func(*testing.T, []byte) response, event []byte, bundleID string) {
	if bundleID == "" {
		t.Fatal("openai-chat's plain answer carried no secureai.smltp_bundle_id")
	}
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	ev.Path = "/receipts/" + bundleID
	ev.PathParameters = map[string]string{"bundleId": bundleID}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	v := jsonBody(t, invoke(t, b), http.StatusOK)
	expectString(t, v, bundleID, "bundle_id")
}

func jsonBody(t *testing.T, r response, status int) any {
	t.Helper()
	if r.status != status {
		t.Errorf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, r.body)
	}
	return v
}

// classicError checks the classic error envelope, whose request_id is the X-Request-Id header.
func classicError(t *testing.T, r response, status int) any {
	t.Helper()
	v := jsonBody(t, r, status)
	if ok, isBool := lookup(v, "success").(bool); !isBool || ok {
		t.Errorf("success = %v, want false", lookup(v, "success"))
	}
	expectString(t, v, r.header.Get("X-Request-Id"), "request_id")
	expectNonEmpty(t, v, "message")
	return v
}

// sseFrames checks an event stream that ended cleanly and returns its JSON frames, [DONE] excluded.
func sseFrames(t *testing.T, r response) []any {
	t.Helper()
	if r.status != http.StatusOK {
		t.Errorf("status %d, want 200; body %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	body := string(r.body)
	rest, ok := strings.CutSuffix(body, "data: [DONE]\n\n")
	if !ok {
		t.Errorf("the stream does not end with data: [DONE]:\n%s", body)
		return nil
	}
	var frames []any
	for ev := range strings.SplitSeq(strings.TrimSuffix(rest, "\n\n"), "\n\n") {
		payload, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(payload, "\n") {
			t.Errorf("frame %q is not one data: line", ev)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(payload), &v); err != nil {
			t.Errorf("frame %q is not JSON: %v", payload, err)
			continue
		}
		frames = append(frames, v)
	}
	if len(frames) == 0 {
		t.Errorf("no frames before [DONE]")
	}
	return frames
}

// sseEvent is one event of a stream of named events: its name and its data, decoded.
type sseEvent struct {
	name string
	data any
}

// namedEvents checks a stream of named events, as the Messages and Responses APIs send them (each
// event an `event:` line and one `data:` line whose type is the event's name), that ended well,
// and returns its events.
func namedEvents(t *testing.T, r response) []sseEvent {
	t.Helper()
	if r.status != http.StatusOK {
		t.Errorf("status %d, want 200; body %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	var evs []sseEvent
	for frame := range strings.SplitSeq(strings.TrimSuffix(string(r.body), "\n\n"), "\n\n") {
		head, payload, ok := strings.Cut(frame, "\n")
		name, isEvent := strings.CutPrefix(head, "event: ")
		payload, isData := strings.CutPrefix(payload, "data: ")
		if !ok || !isEvent || !isData || strings.Contains(payload, "\n") {
			t.Errorf("frame %q is not one event: line and one data: line", frame)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(payload), &v); err != nil {
			t.Errorf("event %s: data %q is not JSON: %v", name, payload, err)
			continue
		}
		if typ, _ := lookup(v, "type").(string); typ != name {
			t.Errorf("event %s carries data of type %q", name, typ)
		}
		if name == "error" || name == "response.failed" {
			t.Errorf("the stream ended with a failure: %s", payload)
		}
		evs = append(evs, sseEvent{name, v})
	}
	if len(evs) == 0 {
		t.Errorf("no events in %q", r.body)
	}
	return evs
}

// expectAnthropicMessage checks the shape of Anthropic's message object, as its SDKs read it.
func expectAnthropicMessage(t *testing.T, v any) {
	t.Helper()
	expectString(t, v, "message", "type")
	expectString(t, v, "assistant", "role")
	if id, _ := lookup(v, "id").(string); !strings.HasPrefix(id, "msg_") {
		t.Errorf("id %q, want msg_…", id)
	}
	expectString(t, v, "text", "content", 0, "type")
	expectNonEmpty(t, v, "content", 0, "text")
	for _, n := range []string{"input_tokens", "output_tokens"} {
		if _, ok := lookup(v, "usage", n).(float64); !ok {
			t.Errorf("usage.%s = %#v, want a number", n, lookup(v, "usage", n))
		}
	}
}

// expectResponseObject checks the shape of a whole Response object served by demo/ok, as the
// OpenAI SDKs read it: one completed assistant message of output_text, and the usage.
func expectResponseObject(t *testing.T, v any) {
	t.Helper()
	expectString(t, v, "response", "object")
	expectString(t, v, "completed", "status")
	expectString(t, v, "demo/ok", "model")
	if id, _ := lookup(v, "id").(string); !strings.HasPrefix(id, "resp_") {
		t.Errorf("id %q, want resp_…", id)
	}
	expectString(t, v, "message", "output", 0, "type")
	expectString(t, v, "assistant", "output", 0, "role")
	expectString(t, v, "output_text", "output", 0, "content", 0, "type")
	expectNonEmpty(t, v, "output", 0, "content", 0, "text")
	for _, n := range []string{"input_tokens", "output_tokens", "total_tokens"} {
		if _, ok := lookup(v, "usage", n).(float64); !ok {
			t.Errorf("usage.%s = %#v, want a number", n, lookup(v, "usage", n))
		}
	}
}

// expectFailover checks the report of demo/error-500 failing over to demo/ok.
func expectFailover(t *testing.T, fo any) {
	t.Helper()
	if occurred, _ := lookup(fo, "occurred").(bool); !occurred {
		t.Errorf("failover.occurred is not true: %v", fo)
	}
	attempts, _ := lookup(fo, "attempts").([]any)
	want := [][3]string{{"demo/error-500", "failed", "server_error"}, {"demo/ok", "served", ""}}
	if len(attempts) != len(want) {
		t.Fatalf("attempts %v, want %v", attempts, want)
	}
	for i, w := range want {
		model, _ := lookup(attempts[i], "model").(string)
		status, _ := lookup(attempts[i], "status").(string)
		reason, _ := lookup(attempts[i], "reason").(string)
		if (model != w[0]) || status != w[1] || reason != w[2] {
			t.Errorf("attempt %d = %v, want model %s status %s reason %q", i, attempts[i], w[0], w[1], w[2])
		}
	}
}

// lookup walks decoded JSON by object keys (string) and array indexes (int); nil when absent.
func lookup(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[p]
		case int:
			a, ok := v.([]any)
			if !ok || p >= len(a) {
				return nil
			}
			v = a[p]
		}
	}
	return v
}

func expectString(t *testing.T, v any, want string, path ...any) {
	t.Helper()
	if got := lookup(v, path...); got != want {
		t.Errorf("%v = %#v, want %q", path, got, want)
	}
}

func expectNonEmpty(t *testing.T, v any, path ...any) {
	t.Helper()
	if s, _ := lookup(v, path...).(string); s == "" {
		t.Errorf("%v = %#v, want a non-empty string", path, lookup(v, path...))
	}
}

func expectTrue(t *testing.T, v any, path ...any) {
	t.Helper()
	if b, _ := lookup(v, path...).(bool); !b {
		t.Errorf("%v = %#v, want true", path, lookup(v, path...))
	}
}

// TestChatFunctionsAtThePlatformLimits runs both chat functions at Lambda's limits.
//
// The deadline: with a 3 s function timeout and a provider that sends three tokens and then
// nothing, each stream ends before the runtime's deadline with its surface's error frame, code
// deadline_exceeded, and no [DONE] — streamed as in the cloud, and collected whole in the buffered
// AWS_SAM_LOCAL mode.
//
// The payload: a body one byte over the cloud's default limit (which fits in Lambda's 6 MB
// request payload with its event around it) reaches the function and is refused with a 413 in
// the surface's envelope.
func TestChatFunctionsAtThePlatformLimits(t *testing.T) {
	root := testenv.RepoRoot(t)
	functions := []string{"openai-chat", "classic-chat"}
	built := make(chan map[string]string, 1)
	go func() { built <- buildAll(t, root, functions) }()
	env := awsFixture(t).env
	upstream := httptest.NewServer(openaifake.New(time.Minute))
	t.Cleanup(upstream.Close)
	overlay := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(overlay, []byte(`{"providers":{"fake":{"type":"openai","base_url":"`+upstream.URL+`/v1"}},
		"models":{"fake/stall":{"upstream":"stall","regions":["us"],"pricing":{"input_per_1m":0,"output_per_1m":0},"points":1,"context_window":8192}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const timeout = 3 * time.Second
	env = append(env, "SECUREAI_CONFIG="+overlay, fmt.Sprintf("AWS_LAMBDA_FUNCTION_TIMEOUT=%d", int(timeout.Seconds())))
	bins := <-built
	if bins == nil {
		t.FailNow()
	}

	for _, fn := range functions {
		b, err := os.ReadFile(filepath.Join(root, "events", fn+"-streaming.json"))
		if err != nil {
			t.Fatal(err)
		}
		ev := strings.Replace(string(b), `\"model\":\"demo/ok\"`, `\"model\":\"fake/stall\"`, 1)
		if ev == string(b) {
			t.Fatalf("events/%s-streaming.json no longer asks for demo/ok; update this test", fn)
		}
		t.Run(fn+"/body-over-the-limit", func(t *testing.T) {
			lambda := testenv.StartLambda(t, bins[fn], append(slices.Clone(env), "AWS_SAM_LOCAL=")...)
			var e events.APIGatewayProxyRequest
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			pad := strings.Repeat("x", int(cloud.DefaultMaxBody))
			e.Body = `{"model":"demo/ok","messages":[{"role":"user","content":"` + pad + `"}]}`
			if fn == "classic-chat" {
				e.Body = `{"model":"demo/ok","index":"Zero-Knowledge","prompt":"` + pad + `"}`
			}
			payload, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			if len(payload) > int(cloud.MaxBodyCap) {
				t.Fatalf("the event is %d bytes, over Lambda's payload cap: the default limit leaves too little room", len(payload))
			}
			resp := decodeStreamed(t, lambda.Invoke(t, payload))
			if fn == "classic-chat" {
				classicError(t, resp, http.StatusRequestEntityTooLarge)
			} else {
				v := jsonBody(t, resp, http.StatusRequestEntityTooLarge)
				expectString(t, v, "invalid_request_error", "error", "type")
			}
		})
		for _, mode := range []struct {
			name   string
			env    string
			decode func(*testing.T, []byte) response
		}{
			{"streamed", "AWS_SAM_LOCAL=", decodeStreamed},
			{"sam-local-buffered", "AWS_SAM_LOCAL=true", decodeBuffered},
		} {
			t.Run(fn+"/"+mode.name, func(t *testing.T) {
				lambda := testenv.StartLambda(t, bins[fn], append(slices.Clone(env), mode.env)...)
				start := time.Now()
				resp := mode.decode(t, lambda.Invoke(t, []byte(ev)))
				if took := time.Since(start); took >= timeout {
					t.Errorf("answered after %v, not before the %v function timeout", took, timeout)
				}
				body := string(resp.body)
				if resp.status != http.StatusOK || strings.Contains(body, "[DONE]") {
					t.Fatalf("status %d, body:\n%s\nwant 200 and a stream without [DONE]\n%s", resp.status, body, lambda.Output())
				}
				frames := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
				last := lookup(decodeFrame(t, frames[len(frames)-1]), "error", "code")
				if fn == "classic-chat" {
					last = lookup(decodeFrame(t, frames[len(frames)-1]), "data", "code")
				}
				if last != "deadline_exceeded" || len(frames) < 3 {
					t.Errorf("%d frames ending with code %v, want the tokens then an error frame with deadline_exceeded:\n%s", len(frames), last, body)
				}
			})
		}
	}
}

func decodeFrame(t *testing.T, frame string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(strings.TrimPrefix(frame, "data: ")), &v); err != nil {
		t.Errorf("frame %q is not JSON: %v", frame, err)
	}
	return v
}

// checkRequestStats reads GET /admin/stats/requests?range=hour with the admin key: the chat
// functions' served requests of this test are counted, by surface.
func checkRequestStats(t *testing.T, invoke func(*testing.T, []byte) response, event []byte, fx fixture) {
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	ev.Headers, ev.MultiValueHeaders = maps.Clone(ev.Headers), maps.Clone(ev.MultiValueHeaders)
	ev.Headers["Authorization"] = "Bearer " + fx.adminKey
	ev.MultiValueHeaders["Authorization"] = []string{"Bearer " + fx.adminKey}
	ev.Path, ev.PathParameters = "/admin/stats/requests", map[string]string{"proxy": "stats/requests"}
	ev.QueryStringParameters = map[string]string{"range": "hour"}
	ev.MultiValueQueryStringParameters = map[string][]string{"range": {"hour"}}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	v := jsonBody(t, invoke(t, b), http.StatusOK)
	buckets, _ := lookup(v, "buckets").([]any)
	var openai, classic float64
	for _, b := range buckets {
		o, _ := lookup(b, "openai", "served").(float64)
		c, _ := lookup(b, "classic", "served").(float64)
		openai, classic = openai+o, classic+c
	}
	if len(buckets) != 60 || openai < 1 || classic < 1 {
		t.Errorf("the last hour's request counts are %v: want 60 minute buckets counting the chat functions' served requests on both surfaces", v)
	}
}
