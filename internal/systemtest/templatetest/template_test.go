package templatetest

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
	"go.yaml.in/yaml/v4"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// tool returns an installed test tool, failing (never skipping) when it is missing.
func tool(t *testing.T, root, rel string) string {
	t.Helper()
	path := filepath.Join(root, rel)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is missing: run `make test` (or `make test-tools`) to install the test tools", rel)
	}
	return path
}

// run runs a linter from the repo root with an environment that cannot reach an AWS account.
func run(t *testing.T, root string, name string, args ...string) (string, error) {
	t.Helper()
	out, err := testenv.OfflineCommand(root, name, args...).CombinedOutput()
	return string(out), err
}

func TestTemplateLints(t *testing.T) {
	root := testenv.RepoRoot(t)
	linters := []struct {
		name string
		bin  string
		args []string
	}{
		{"cfn-lint", ".venv/bin/cfn-lint", []string{"template.yaml"}},
		{"sam validate --lint", ".venv/bin/sam", []string{"validate", "--lint", "--template", "template.yaml"}},
	}
	for _, l := range linters {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			bin := tool(t, root, l.bin)
			if out, err := run(t, root, bin, l.args...); err != nil {
				t.Errorf("%s found problems in template.yaml (%v):\n%s", l.name, err, out)
			}
		})
	}
	// The check is live: cfn-lint does fail a broken template, so a pass above means something.
	t.Run("cfn-lint catches a broken template", func(t *testing.T) {
		t.Parallel()
		bin := tool(t, root, ".venv/bin/cfn-lint")
		b, err := os.ReadFile(filepath.Join(root, "template.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		broken := strings.Replace(string(b), "BillingMode: PAY_PER_REQUEST", "BillingMode: PAY_PER_QUERY", 1)
		if broken == string(b) {
			t.Fatal("template.yaml no longer has `BillingMode: PAY_PER_REQUEST` to break; update this test")
		}
		path := filepath.Join(t.TempDir(), "template.yaml")
		if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := run(t, root, bin, path); err == nil {
			t.Errorf("cfn-lint passed a template with an invalid BillingMode:\n%s", out)
		}
	})
}

// template is template.yaml decoded as nodes, so CloudFormation tags (!Ref, !If…) need no types.
type template struct{ root *yaml.Node }

func loadTemplate(t *testing.T, root string) template {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		t.Fatal("template.yaml is not one YAML document")
	}
	return template{root: doc.Content[0]}
}

// get walks mapping keys; nil when any is absent.
func get(n *yaml.Node, path ...string) *yaml.Node {
	for _, key := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}

func scalar(n *yaml.Node, path ...string) string {
	if n = get(n, path...); n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// ref returns the logical id of a `!Ref X` node, "" otherwise.
func ref(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!Ref" {
		return ""
	}
	return n.Value
}

// resources returns the logical ids of resources of type typ, sorted.
func (tp template) resources(typ string) []string {
	res := get(tp.root, "Resources")
	var ids []string
	for i := 0; res != nil && i+1 < len(res.Content); i += 2 {
		if scalar(res.Content[i+1], "Type") == typ {
			ids = append(ids, res.Content[i].Value)
		}
	}
	sort.Strings(ids)
	return ids
}

func (tp template) resource(id string) *yaml.Node { return get(tp.root, "Resources", id) }

// tableEnv maps the environment variables cloud.ParseConfig reads table names from to the
// dynamostore.Tables field each fills. A table added to the template or the schema must be added
// here, to cloud and to schema.go together.
var tableEnv = map[string]func(*dynamostore.Tables) *string{
	"SECUREAI_TABLE_API_KEYS":         func(t *dynamostore.Tables) *string { return &t.APIKeys },
	"SECUREAI_TABLE_IDEMPOTENCY":      func(t *dynamostore.Tables) *string { return &t.Idempotency },
	"SECUREAI_TABLE_WEBHOOKS":         func(t *dynamostore.Tables) *string { return &t.Webhooks },
	"SECUREAI_TABLE_WEBHOOK_ATTEMPTS": func(t *dynamostore.Tables) *string { return &t.WebhookAttempts },
	"SECUREAI_TABLE_AUDIT":            func(t *dynamostore.Tables) *string { return &t.Audit },
	"SECUREAI_TABLE_LIMITS":           func(t *dynamostore.Tables) *string { return &t.Limits },
	"SECUREAI_TABLE_USERS":            func(t *dynamostore.Tables) *string { return &t.Users },
	"SECUREAI_TABLE_RECEIPTS":         func(t *dynamostore.Tables) *string { return &t.Receipts },
	"SECUREAI_TABLE_CIRCUIT_BREAKERS": func(t *dynamostore.Tables) *string { return &t.CircuitBreakers },
	"SECUREAI_TABLE_PROVIDER_HEALTH":  func(t *dynamostore.Tables) *string { return &t.ProviderHealth },
}

// tableVars returns every SECUREAI_TABLE_* variable the template sets, in Globals or in a
// function's own environment, with the node it is set to; a variable set to different values in
// two places is an error.
func (tp template) tableVars(t *testing.T) map[string]*yaml.Node {
	vars := map[string]*yaml.Node{}
	for _, env := range tp.environments() {
		for i := 0; i+1 < len(env.vars.Content); i += 2 {
			name, val := env.vars.Content[i].Value, env.vars.Content[i+1]
			if !strings.HasPrefix(name, "SECUREAI_TABLE_") {
				continue
			}
			if prev, ok := vars[name]; ok && (prev.Tag != val.Tag || prev.Value != val.Value) {
				t.Errorf("%s sets %s to %s %s, elsewhere it is %s %s", env.owner, name, val.Tag, val.Value, prev.Tag, prev.Value)
				continue
			}
			vars[name] = val
		}
	}
	return vars
}

// environment is the variables Globals or one function sets.
type environment struct {
	owner string // "Globals" or the function's logical id
	vars  *yaml.Node
}

func (tp template) environments() []environment {
	var envs []environment
	if v := get(tp.root, "Globals", "Function", "Environment", "Variables"); v != nil {
		envs = append(envs, environment{"Globals", v})
	}
	for _, id := range tp.resources("AWS::Serverless::Function") {
		if v := get(tp.resource(id), "Properties", "Environment", "Variables"); v != nil {
			envs = append(envs, environment{id, v})
		}
	}
	return envs
}

// TestTablesMatchSchema creates the tables from dynamostore's schema on moto and compares what
// DynamoDB reports with what the template declares: attributes, key schema, indexes, billing, TTL.
func TestTablesMatchSchema(t *testing.T) {
	root := testenv.RepoRoot(t)
	tp := loadTemplate(t, root)
	vars := tp.tableVars(t)

	tables := dynamostore.Tables{}
	logical := map[string]string{} // physical test name → template logical id
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		field, ok := tableEnv[name]
		if !ok {
			t.Errorf("the template sets %s, which this test (and dynamostore.Tables) does not know", name)
			continue
		}
		id := ref(vars[name])
		if scalar(tp.resource(id), "Type") != "AWS::DynamoDB::Table" {
			t.Errorf("%s is %v, want !Ref to an AWS::DynamoDB::Table", name, vars[name].Value)
			continue
		}
		probe := func(k string) string {
			if k == name || k == "SECUREAI_TABLE_API_KEYS" {
				return "probe-" + strings.ToLower(k[len("SECUREAI_TABLE_"):])
			}
			return ""
		}
		if cfg, err := cloud.ParseConfig(probe); err != nil || *field(&cfg.Tables) != probe(name) {
			t.Errorf("cloud.ParseConfig does not read %s into its dynamostore.Tables (%v)", name, err)
		}
		*field(&tables) = testenv.UniqueName(t, id)
		logical[*field(&tables)] = id
	}
	for name := range tableEnv {
		if vars[name] == nil {
			t.Errorf("no function's environment sets %s", name)
		}
	}
	var referenced []string
	for _, id := range logical {
		referenced = append(referenced, id)
	}
	sort.Strings(referenced)
	if all := tp.resources("AWS::DynamoDB::Table"); !slices.Equal(all, referenced) {
		t.Errorf("the template's tables %v, but the functions are told about %v", all, referenced)
	}
	if t.Failed() {
		t.FailNow()
	}

	ctx := context.Background()
	db := dynamodb.NewFromConfig(testenv.AWSConfig(t, testenv.Moto(t)))
	if err := dynamostore.CreateTables(ctx, db, tables); err != nil {
		t.Fatal(err)
	}
	for physical, id := range logical {
		t.Run(id, func(t *testing.T) {
			compareTable(t, ctx, db, physical, tp.resource(id))
		})
	}
}

func compareTable(t *testing.T, ctx context.Context, db *dynamodb.Client, name string, res *yaml.Node) {
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	td := desc.Table
	props := get(res, "Properties")

	var schemaAttrs, tmplAttrs []string
	for _, a := range td.AttributeDefinitions {
		schemaAttrs = append(schemaAttrs, aws.ToString(a.AttributeName)+":"+string(a.AttributeType))
	}
	for _, a := range items(get(props, "AttributeDefinitions")) {
		tmplAttrs = append(tmplAttrs, scalar(a, "AttributeName")+":"+scalar(a, "AttributeType"))
	}
	expectSame(t, "AttributeDefinitions", schemaAttrs, tmplAttrs)

	var schemaKeys []string
	for _, k := range td.KeySchema {
		schemaKeys = append(schemaKeys, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
	}
	expectSame(t, "KeySchema", schemaKeys, keySchema(get(props, "KeySchema")))

	var schemaGSIs, tmplGSIs []string
	for _, g := range td.GlobalSecondaryIndexes {
		var keys []string
		for _, k := range g.KeySchema {
			keys = append(keys, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
		}
		proj := ""
		if g.Projection != nil {
			proj = string(g.Projection.ProjectionType)
		}
		schemaGSIs = append(schemaGSIs, aws.ToString(g.IndexName)+" "+strings.Join(keys, ",")+" "+proj)
	}
	for _, g := range items(get(props, "GlobalSecondaryIndexes")) {
		tmplGSIs = append(tmplGSIs, scalar(g, "IndexName")+" "+strings.Join(keySchema(get(g, "KeySchema")), ",")+" "+scalar(g, "Projection", "ProjectionType"))
	}
	expectSame(t, "GlobalSecondaryIndexes", schemaGSIs, tmplGSIs)

	billing := "PROVISIONED"
	if td.BillingModeSummary != nil {
		billing = string(td.BillingModeSummary.BillingMode)
	}
	if got := scalar(props, "BillingMode"); got != billing {
		t.Errorf("BillingMode: schema %s, template %q", billing, got)
	}

	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	schemaTTL := ""
	if d := ttl.TimeToLiveDescription; d != nil && d.TimeToLiveStatus == "ENABLED" {
		schemaTTL = aws.ToString(d.AttributeName)
	}
	tmplTTL := ""
	if scalar(props, "TimeToLiveSpecification", "Enabled") == "true" {
		tmplTTL = scalar(props, "TimeToLiveSpecification", "AttributeName")
	}
	if schemaTTL != tmplTTL {
		t.Errorf("TTL attribute: schema %q, template %q (\"\" = none)", schemaTTL, tmplTTL)
	}
}

func items(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

func keySchema(n *yaml.Node) []string {
	var keys []string
	for _, k := range items(n) {
		keys = append(keys, scalar(k, "AttributeName")+":"+scalar(k, "KeyType"))
	}
	return keys
}

func expectSame(t *testing.T, what string, schema, tmpl []string) {
	t.Helper()
	if !slices.Equal(slices.Sorted(slices.Values(schema)), slices.Sorted(slices.Values(tmpl))) {
		t.Errorf("%s: schema.go %v, template %v", what, schema, tmpl)
	}
}

var buildTarget = regexp.MustCompile(`(?m)^build-([A-Za-z0-9]+):.*\$\(call lambda_build,([a-z0-9-]+),`)

// TestFunctionsMatchTemplate checks each functions/<name> against its template function: built
// by `sam build` through a Makefile target, traced, logging to a group with retention, and
// streaming through API Gateway exactly when its main.go starts a streaming handler.
func TestFunctionsMatchTemplate(t *testing.T) {
	root := testenv.RepoRoot(t)
	tp := loadTemplate(t, root)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{} // function dir → logical id
	for _, m := range buildTarget.FindAllStringSubmatch(string(makefile), -1) {
		if prev, dup := targets[m[2]]; dup {
			t.Errorf("Makefile builds functions/%s for both %s and %s", m[2], prev, m[1])
		}
		targets[m[2]] = m[1]
	}

	// Active tracing (the segment the X-Ray SDK records into) exactly when Traces=xray.
	if tr := get(tp.root, "Globals", "Function", "Tracing"); tr == nil || tr.Tag != "!If" || len(tr.Content) != 3 ||
		tr.Content[0].Value != "XRaySDK" || tr.Content[1].Value != "Active" || tr.Content[2].Value != "PassThrough" {
		t.Error("Globals.Function.Tracing is not !If [XRaySDK, Active, PassThrough]")
	}
	if c := get(tp.root, "Conditions", "XRaySDK"); c == nil || c.Tag != "!Equals" || len(c.Content) != 2 ||
		ref(c.Content[0]) != "Traces" || c.Content[1].Value != "xray" {
		t.Error("Conditions.XRaySDK is not !Equals [!Ref Traces, xray]")
	}
	if got := scalar(tp.root, "Globals", "Function", "Runtime"); got != "provided.al2023" {
		t.Errorf("Globals.Function.Runtime = %q, want provided.al2023", got)
	}
	if got := scalar(tp.root, "Globals", "Function", "Handler"); got != "bootstrap" {
		t.Errorf("Globals.Function.Handler = %q, want bootstrap", got)
	}

	entries, err := os.ReadDir(filepath.Join(root, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := e.Name()
		t.Run(dir, func(t *testing.T) {
			id, ok := targets[dir]
			if !ok {
				t.Fatalf("the Makefile has no build-<LogicalId> target calling lambda_build,%s", dir)
			}
			seen[id] = true
			fn := tp.resource(id)
			if scalar(fn, "Type") != "AWS::Serverless::Function" {
				t.Fatalf("Makefile target build-%s names no AWS::Serverless::Function in template.yaml", id)
			}
			if got := scalar(fn, "Metadata", "BuildMethod"); got != "makefile" {
				t.Errorf("%s Metadata.BuildMethod = %q, want makefile (so sam build runs build-%s)", id, got, id)
			}
			if got := scalar(fn, "Properties", "Tracing"); got != "" && got != "Active" {
				t.Errorf("%s overrides Tracing with %q", id, got)
			}

			group := ref(get(fn, "Properties", "LoggingConfig", "LogGroup"))
			if scalar(tp.resource(group), "Type") != "AWS::Logs::LogGroup" {
				t.Errorf("%s LoggingConfig.LogGroup is not !Ref to an AWS::Logs::LogGroup", id)
			} else if get(tp.resource(group), "Properties", "RetentionInDays") == nil {
				t.Errorf("log group %s of %s has no RetentionInDays", group, id)
			}

			main, err := os.ReadFile(filepath.Join(root, "functions", dir, "main.go"))
			if err != nil {
				t.Fatal(err)
			}
			streaming := strings.Contains(string(main), "awslambda.StartStreaming(")
			evs := get(fn, "Properties", "Events")
			var fed []queueMapping
			for _, m := range tp.queueMappings() {
				if m.function == id {
					fed = append(fed, m)
				}
			}
			if (evs == nil || len(evs.Content) == 0) == (len(fed) == 0) {
				t.Fatalf("%s has API Events %v and queue mappings %v: want one or the other", id, evs != nil, fed)
			}
			for _, m := range fed {
				// An event consumer: failed messages come back alone, never the whole batch.
				if got := get(m.props, "FunctionResponseTypes"); got == nil || len(got.Content) != 1 || got.Content[0].Value != "ReportBatchItemFailures" || streaming {
					t.Errorf("%s fed by %s: a buffered consumer with FunctionResponseTypes [ReportBatchItemFailures] wanted", id, m.id)
				}
			}
			for i := 0; evs != nil && i+1 < len(evs.Content); i += 2 {
				name, ev := evs.Content[i].Value, evs.Content[i+1]
				if scalar(ev, "Type") == "Schedule" && !streaming {
					continue // a scheduled job (refund-sweep): no route, no batch
				}
				if typ := scalar(ev, "Type"); typ != "Api" {
					t.Errorf("%s event %s is %q, want Api (response streaming needs a REST API)", id, name, typ)
				}
				mode := scalar(ev, "Properties", "ResponseTransferMode")
				switch {
				case streaming && mode != "RESPONSE_STREAM":
					t.Errorf("%s event %s: ResponseTransferMode %q, want RESPONSE_STREAM (main.go streams)", id, name, mode)
				case !streaming && mode != "":
					t.Errorf("%s event %s: ResponseTransferMode %q on a buffered function", id, name, mode)
				}
			}
		})
	}
	for _, id := range tp.resources("AWS::Serverless::Function") {
		if !seen[id] {
			t.Errorf("template function %s has no functions/<name> built by a Makefile build-%s target", id, id)
		}
	}
}
