package templatetest

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
	"go.yaml.in/yaml/v4"
)

// guarded are the resource types a function is told about through its environment and granted
// through its policies.
var guarded = []string{"AWS::DynamoDB::Table", "AWS::SecretsManager::Secret", "AWS::Events::EventBus", "AWS::SQS::Queue"}

var subRef = regexp.MustCompile(`\$\{([A-Za-z0-9]+)[.}]`)

// refs collects the logical ids n refers to: !Ref X, !GetAtt X.Attr, !Sub "${X…}".
func refs(n *yaml.Node, into map[string]bool) {
	if n == nil {
		return
	}
	switch n.Tag {
	case "!Ref":
		into[n.Value] = true
	case "!GetAtt":
		id, _, _ := strings.Cut(n.Value, ".")
		into[id] = true
	case "!Sub":
		for _, m := range subRef.FindAllStringSubmatch(n.Value, -1) {
			into[m[1]] = true
		}
	}
	for _, c := range n.Content {
		refs(c, into)
	}
}

// Least privilege, both ways: a function's policies grant access only to the tables, secrets,
// queues and bus its environment (or Globals) names — what cloud.GatewayDeps turns on — or the
// queue it is fed by, and
// everything its own environment names is granted, so no feature is on where the function cannot
// use it.
func TestFunctionsAreGrantedWhatTheyAreToldAbout(t *testing.T) {
	tp := loadTemplate(t, testenv.RepoRoot(t))
	isGuarded := func(id string) bool { return slices.Contains(guarded, scalar(tp.resource(id), "Type")) }
	globals := map[string]bool{}
	refs(get(tp.root, "Globals", "Function", "Environment", "Variables"), globals)

	for _, id := range tp.resources("AWS::Serverless::Function") {
		t.Run(id, func(t *testing.T) {
			fn := tp.resource(id)
			own, granted := map[string]bool{}, map[string]bool{}
			refs(get(fn, "Properties", "Environment", "Variables"), own)
			for _, m := range tp.queueMappings() {
				if m.function == id {
					own[m.queue] = true // Lambda polls the queue with the function's role
				}
			}
			refs(get(fn, "Properties", "Policies"), granted)
			for r := range granted {
				if isGuarded(r) && !own[r] && !globals[r] {
					t.Errorf("%s is granted access to %s, which its environment does not name", id, r)
				}
			}
			for r := range own {
				if isGuarded(r) && !granted[r] {
					t.Errorf("%s's environment names %s, which its policies grant nothing on", id, r)
				}
			}
		})
	}
}
