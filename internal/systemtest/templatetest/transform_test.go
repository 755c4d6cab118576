package templatetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// cfn is template.yaml as CloudFormation receives it: transformed by the SAM translator the
// project pins (.venv, aws-sam-cli in requirements-test.txt), decoded from JSON. Lint passing is
// not enough — SAM takes `Cors: !If [...]` whole as an origin value and cfn-lint passes it — so
// the deployed shape is asserted here.
type cfn struct {
	Parameters map[string]map[string]any `json:"Parameters"`
	Conditions map[string]any            `json:"Conditions"`
	Resources  map[string]cfnResource    `json:"Resources"`
	// params are the parameter values the template was transformed with, defaults filled in;
	// conditions evaluate against them (see resolve).
	params map[string]string
}

type cfnResource struct {
	Type                string         `json:"Type"`
	Condition           string         `json:"Condition"`
	DeletionPolicy      string         `json:"DeletionPolicy"`
	UpdateReplacePolicy string         `json:"UpdateReplacePolicy"`
	Properties          map[string]any `json:"Properties"`
}

type transformResult struct {
	once sync.Once
	tmpl cfn
	err  error
}

var transforms sync.Map // params as JSON → *transformResult: one translator run per parameter set

// transformed returns template.yaml transformed with the given parameter values (those left out
// take their defaults), by testenv.SAMTransform; a missing tool is a failure saying how to
// install it, never a skip.
func transformed(t *testing.T, params map[string]string) cfn {
	t.Helper()
	if params == nil {
		params = map[string]string{}
	}
	key, err := json.Marshal(params) // map keys marshal sorted: one key per parameter set
	if err != nil {
		t.Fatal(err)
	}
	v, _ := transforms.LoadOrStore(string(key), &transformResult{})
	res := v.(*transformResult)
	res.once.Do(func() {
		out, err := testenv.SAMTransform(params)
		if err != nil {
			res.err = err
			return
		}
		if err := json.Unmarshal(out, &res.tmpl); err != nil {
			res.err = fmt.Errorf("the SAM translator's output is not CloudFormation JSON: %v", err)
			return
		}
		res.tmpl.params = map[string]string{}
		for name, p := range res.tmpl.Parameters {
			if d, ok := p["Default"]; ok {
				res.tmpl.params[name] = fmt.Sprint(d)
			}
		}
		for name, val := range params {
			if _, ok := res.tmpl.Parameters[name]; !ok {
				res.err = fmt.Errorf("template.yaml has no parameter %s", name)
				return
			}
			res.tmpl.params[name] = val
		}
	})
	if res.err != nil {
		t.Fatal(res.err)
	}
	return res.tmpl
}

// ofType returns the logical ids of resources of type typ, sorted.
func (c cfn) ofType(typ string) []string {
	var ids []string
	for id, r := range c.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// resolve evaluates the intrinsics whose value the parameters decide: Ref to a parameter, Fn::If
// (with Fn::Equals/Not/And/Or/Condition conditions) and AWS::NoValue, which drops the key or
// item. Anything else (Ref to a resource, Fn::GetAtt, Fn::Sub…) is returned as it is.
func (c cfn) resolve(t *testing.T, v any) any {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			if r, ok := x["Ref"].(string); ok {
				if r == "AWS::NoValue" {
					return noValue{}
				}
				if p, ok := c.params[r]; ok {
					return p
				}
				return x
			}
			if args, ok := x["Fn::If"].([]any); ok && len(args) == 3 {
				if c.condition(t, args[0].(string)) {
					return c.resolve(t, args[1])
				}
				return c.resolve(t, args[2])
			}
		}
		out := map[string]any{}
		for k, e := range x {
			if r := c.resolve(t, e); r != (noValue{}) {
				out[k] = r
			}
		}
		return out
	case []any:
		var out []any
		for _, e := range x {
			if r := c.resolve(t, e); r != (noValue{}) {
				out = append(out, r)
			}
		}
		return out
	}
	return v
}

type noValue struct{}

// condition evaluates the template's condition name with the parameters.
func (c cfn) condition(t *testing.T, name string) bool {
	t.Helper()
	expr, ok := c.Conditions[name]
	if !ok {
		t.Fatalf("the transformed template has no condition %s", name)
	}
	return c.evalCondition(t, expr)
}

func (c cfn) evalCondition(t *testing.T, expr any) bool {
	t.Helper()
	m, ok := expr.(map[string]any)
	if !ok || len(m) != 1 {
		t.Fatalf("condition %v: want one intrinsic", expr)
	}
	for fn, arg := range m {
		args, _ := arg.([]any)
		switch fn {
		case "Condition":
			return c.condition(t, arg.(string))
		case "Fn::Not":
			return !c.evalCondition(t, args[0])
		case "Fn::And":
			return !slices.ContainsFunc(args, func(a any) bool { return !c.evalCondition(t, a) })
		case "Fn::Or":
			return slices.ContainsFunc(args, func(a any) bool { return c.evalCondition(t, a) })
		case "Fn::Equals":
			return fmt.Sprint(c.resolve(t, args[0])) == fmt.Sprint(c.resolve(t, args[1]))
		}
		t.Fatalf("condition %v: %s is not evaluated by this test", expr, fn)
	}
	return false
}

// present reports whether resource id is created with these parameters (its Condition holds).
func (c cfn) present(t *testing.T, id string) bool {
	r := c.Resources[id]
	return r.Condition == "" || c.condition(t, r.Condition)
}

// props returns resource id's Properties with the parameters' intrinsics resolved.
func (c cfn) props(t *testing.T, id string) map[string]any {
	t.Helper()
	p, _ := c.resolve(t, c.Resources[id].Properties).(map[string]any)
	return p
}

// dig walks map keys and, for a numeric key, list indexes; nil when any is absent.
func dig(v any, path ...string) any {
	for _, k := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			var i int
			if _, err := fmt.Sscan(k, &i); err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// TestTemplateTransforms checks the helper itself: the pinned translator turns every SAM
// function into a Lambda function with its role, and the parameters given are the ones used.
func TestTemplateTransforms(t *testing.T) {
	c := transformed(t, nil)
	src := loadTemplate(t, testenv.RepoRoot(t))
	for _, id := range src.resources("AWS::Serverless::Function") {
		if c.Resources[id].Type != "AWS::Lambda::Function" {
			t.Errorf("%s is not an AWS::Lambda::Function after the transform", id)
		}
		if c.Resources[id+"Role"].Type != "AWS::IAM::Role" {
			t.Errorf("%s has no role %sRole after the transform", id, id)
		}
	}
	for _, r := range c.Resources {
		if strings.HasPrefix(r.Type, "AWS::Serverless::") {
			t.Errorf("a %s is left after the transform", r.Type)
		}
	}
	for params, want := range map[string]string{"": "v1", "prod": "prod"} {
		c := transformed(t, map[string]string{})
		if params != "" {
			c = transformed(t, map[string]string{"Stage": params})
		}
		var names []any
		for _, id := range c.ofType("AWS::ApiGateway::Stage") {
			if c.present(t, id) {
				names = append(names, dig(c.props(t, id), "StageName"))
			}
		}
		if len(names) == 0 || names[0] != want {
			t.Errorf("transformed with Stage=%q, the API's stages are named %v, want %s first", params, names, want)
		}
	}
}
