package templatetest

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/envvar"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
	"go.yaml.in/yaml/v4"
)

// parameterSamples are, for each parameter that reaches a function's environment, values the
// function's parser accepts (the pattern must admit them) and values it refuses (the pattern must
// refuse them, so the deploy fails instead of every request).
var parameterSamples = map[string]struct{ valid, invalid []string }{
	"OtlpEndpoint": {
		valid:   []string{"", "http://localhost:4318", "https://otlp.example.com", "https://api.honeycomb.io:443/otlp"},
		invalid: []string{"localhost:4318", "grpc://collector:4317", "http://", "http://host/path?query=1"},
	},
	"Traces":       {valid: []string{"otlp", "xray", "off"}, invalid: []string{"x-ray", "OTLP", "none"}},
	"TraceContent": {valid: []string{"true", "false"}, invalid: []string{"yes", "on"}},
	"KeyCacheTTL": {
		valid:   []string{"30s", "0", "5m", "1h", "250ms", "1m30s", "90s"},
		invalid: []string{"30", "-5s", "30 s", "1d", "thirty", "s"},
	},
	"AllowedOrigins": {
		valid: []string{"''", "'*'", "'https://app.example.com'", "'http://localhost:3000'"},
		invalid: []string{"https://app.example.com", "'https://app.example.com/'", "'app.example.com'",
			"'ftp://files.example.com'", "'https://a.example.com, https://b.example.com'", "'https://app.example.com:port'"},
	},
}

// samplePhysical stands in for the value a !Ref to a resource resolves to at deploy time.
var samplePhysical = map[string]string{
	"AWS::DynamoDB::Table":        "secureai-ApiKeysTable-1A2B3C4D5E6F",
	"AWS::SecretsManager::Secret": "arn:aws:secretsmanager:us-east-1:123456789012:secret:ProviderKeysSecret-AbCdEf",
	"AWS::Events::EventBus":       "secureai-events",
	"AWS::SQS::Queue":             "https://sqs.us-east-1.amazonaws.com/123456789012/secureai-queue",
}

// TestParametersMatchTheParser checks every template parameter is constrained, and that each one
// a function reads admits exactly values the function's configuration parser (cloud.ParseConfig)
// accepts: KeyCacheTTL=30 must fail the deploy, not every request.
func TestParametersMatchTheParser(t *testing.T) {
	tp := loadTemplate(t, testenv.RepoRoot(t))
	params := get(tp.root, "Parameters")
	if params == nil {
		t.Fatal("template.yaml has no Parameters")
	}
	env := tp.functionEnv()
	feeds := map[string][]string{} // parameter → the variables it sets
	for name, n := range env {
		if p := ref(n); get(params, p) != nil {
			feeds[p] = append(feeds[p], name)
		}
	}
	// base is the environment as deployed with every parameter at its default.
	base := map[string]string{}
	for name, n := range env {
		base[name] = tp.resolve(t, n)
	}
	if _, err := cloud.ParseConfig(lookup(base)); err != nil {
		t.Fatalf("the template's own environment, parameters at their defaults, does not parse: %v", err)
	}

	for i := 0; i+1 < len(params.Content); i += 2 {
		name, p := params.Content[i].Value, params.Content[i+1]
		t.Run(name, func(t *testing.T) {
			admits := constraint(t, p)
			if def := scalar(p, "Default"); !admits(def) {
				t.Errorf("the Default %q breaks the parameter's own constraint", def)
			}
			vars := feeds[name]
			if len(vars) == 0 {
				return // read by CloudFormation or API Gateway only
			}
			samples, ok := parameterSamples[name]
			if !ok {
				t.Fatalf("%s sets %v: add valid and invalid samples for it to parameterSamples", name, vars)
			}
			parse := func(v string) error {
				over := map[string]string{}
				for k, val := range base {
					over[k] = val
				}
				for _, k := range vars {
					over[k] = v
				}
				_, err := cloud.ParseConfig(lookup(over))
				return err
			}
			for _, v := range samples.valid {
				if !admits(v) {
					t.Errorf("the constraint refuses %q, a value the parser accepts", v)
				}
				if err := parse(v); err != nil {
					t.Errorf("valid sample %q: the parser refuses it: %v", v, err)
				}
			}
			for _, v := range samples.invalid {
				var bad *envvar.Error
				if err := parse(v); !errors.As(err, &bad) || !slices.Contains(vars, bad.Name) {
					t.Errorf("invalid sample %q: parser error %v, want one naming %v", v, err, vars)
				}
				if admits(v) {
					t.Errorf("the constraint admits %q, which the parser refuses: the deploy would pass and every request fail", v)
				}
			}
		})
	}
}

// constraint returns what CloudFormation admits for a parameter: its AllowedValues, or its
// AllowedPattern matched against the whole value. A parameter with neither fails the test.
func constraint(t *testing.T, p *yaml.Node) func(string) bool {
	t.Helper()
	if vals := items(get(p, "AllowedValues")); len(vals) > 0 {
		var allowed []string
		for _, v := range vals {
			allowed = append(allowed, v.Value)
		}
		return func(v string) bool { return slices.Contains(allowed, v) }
	}
	pattern := scalar(p, "AllowedPattern")
	if lo, hi := scalar(p, "MinValue"), scalar(p, "MaxValue"); scalar(p, "Type") == "Number" && lo != "" && hi != "" {
		// A Number has no pattern: CloudFormation admits a number within its bounds.
		return func(v string) bool {
			var n, min, max float64
			_, e1 := fmt.Sscan(v, &n)
			_, e2 := fmt.Sscan(lo, &min)
			_, e3 := fmt.Sscan(hi, &max)
			return e1 == nil && e2 == nil && e3 == nil && n >= min && n <= max
		}
	}
	if pattern == "" {
		t.Fatal("no AllowedPattern, AllowedValues or (for a Number) MinValue and MaxValue: a malformed value would deploy")
	}
	// CloudFormation matches the whole value; Go's RE2 syntax is the portable subset of Java's.
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		t.Fatalf("AllowedPattern %q: %v", pattern, err)
	}
	return re.MatchString
}

// functionEnv merges the Globals environment with every function's own (a function's wins).
func (tp template) functionEnv() map[string]*yaml.Node {
	env := map[string]*yaml.Node{}
	add := func(vars *yaml.Node) {
		for i := 0; vars != nil && i+1 < len(vars.Content); i += 2 {
			env[vars.Content[i].Value] = vars.Content[i+1]
		}
	}
	add(get(tp.root, "Globals", "Function", "Environment", "Variables"))
	for _, id := range tp.resources("AWS::Serverless::Function") {
		add(get(tp.resource(id), "Properties", "Environment", "Variables"))
	}
	return env
}

// resolve gives a variable's deployed value: a literal, a parameter's default, or a sample of
// what a resource's !Ref returns.
func (tp template) resolve(t *testing.T, n *yaml.Node) string {
	t.Helper()
	id := ref(n)
	if id == "" {
		if n.Kind != yaml.ScalarNode {
			t.Fatalf("environment value %v at line %d is neither a literal nor a !Ref", n.Tag, n.Line)
		}
		return n.Value
	}
	if p := get(tp.root, "Parameters", id); p != nil {
		return scalar(p, "Default")
	}
	typ := scalar(tp.resource(id), "Type")
	v, ok := samplePhysical[typ]
	if !ok {
		t.Fatalf("!Ref %s (%s): add a sample physical value to samplePhysical", id, typ)
	}
	return v
}

func lookup(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}
