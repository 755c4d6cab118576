package templatetest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/local/localserver"
)

// Each endpoint's function gets exactly what the endpoint needs (gateway.Endpoint.Needs): in the
// template as CloudFormation receives it, the function's environment names every variable that
// turns on a feature it needs and none that turns on another, and its role's policies grant access
// to each table, secret, bus and queue those variables name.
func TestEachEndpointsFunctionIsGivenWhatItNeeds(t *testing.T) {
	c := transformed(t, nil)
	featureVars := map[string]bool{}
	for _, vars := range cloud.FeatureEnv {
		for _, v := range vars {
			featureVars[v] = true
		}
	}
	for _, e := range localserver.Endpoints() {
		t.Run(e.Function, func(t *testing.T) {
			fn, ok := c.Resources[e.Function]
			if !ok || fn.Type != "AWS::Lambda::Function" {
				t.Fatalf("template.yaml has no function %s", e.Function)
			}
			var want []string
			for need, vars := range cloud.FeatureEnv {
				if e.Needs.Has(need) {
					want = append(want, vars...)
				}
			}
			sort.Strings(want)
			env, _ := c.resolve(t, fn.Properties["Environment"]).(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			var got []string
			for name := range vars {
				if featureVars[name] {
					got = append(got, name)
				}
			}
			sort.Strings(got)
			if !slices.Equal(got, want) {
				t.Errorf("its environment turns on %v; the endpoint needs %v", got, want)
			}
			policies := rolePolicies(t, c, e.Function, fn)
			for _, name := range want {
				for _, id := range resourcesIn(vars[name]) {
					if _, ok := c.Resources[id]; !ok {
						continue // a parameter's value, not a resource
					}
					if !mentions(policies, id) {
						t.Errorf("%s names %s, which its role's policies grant nothing on", name, id)
					}
				}
			}
		})
	}
}

// rolePolicies is the JSON of the policies of fn's execution role.
func rolePolicies(t *testing.T, c cfn, id string, fn cfnResource) string {
	t.Helper()
	role, _ := fn.Properties["Role"].(map[string]any)
	att, _ := role["Fn::GetAtt"].([]any)
	if len(att) == 0 {
		t.Fatalf("%s's Role is %v, not its own role's Arn", id, fn.Properties["Role"])
	}
	r, ok := c.Resources[fmt.Sprint(att[0])]
	if !ok || r.Type != "AWS::IAM::Role" {
		t.Fatalf("%s's role %v is not an AWS::IAM::Role of the template", id, att[0])
	}
	b, err := json.Marshal(c.resolve(t, r.Properties["Policies"]))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// resourcesIn returns the logical ids v refers to: {"Ref": X}, {"Fn::GetAtt": [X, …]}, "${X…}" in
// a Fn::Sub.
func resourcesIn(v any) []string {
	var ids []string
	switch x := v.(type) {
	case map[string]any:
		if r, ok := x["Ref"].(string); ok {
			ids = append(ids, r)
		}
		if att, ok := x["Fn::GetAtt"].([]any); ok && len(att) > 0 {
			ids = append(ids, fmt.Sprint(att[0]))
		}
		for _, e := range x {
			ids = append(ids, resourcesIn(e)...)
		}
	case []any:
		for _, e := range x {
			ids = append(ids, resourcesIn(e)...)
		}
	case string:
		for _, m := range subRef.FindAllStringSubmatch(x, -1) {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// mentions reports whether policies (JSON) refer to the resource id: "id" (Ref, Fn::GetAtt) or
// ${id} and ${id.Attr} (Fn::Sub).
func mentions(policies, id string) bool {
	q := regexp.QuoteMeta(id)
	return regexp.MustCompile(`"` + q + `"|\$\{` + q + `[.}]`).MatchString(policies)
}
