package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/fault"
)

var (
	gpt     = &catalog.Model{Name: "openai/gpt-5-nano", Provider: "openai", Regions: []string{"us"}}
	gemini  = &catalog.Model{Name: "google/gemini-2.5-flash", Provider: "google", Regions: []string{"us", "eu"}}
	nova    = &catalog.Model{Name: "bedrock/amazon.nova-lite", Provider: "bedrock", Regions: []string{"us-east-1"}}
	novaEU  = &catalog.Model{Name: "bedrock/eu.nova", Provider: "bedrock", Regions: []string{"eu-central-1"}}
	unknown = &catalog.Model{Name: "selfhosted/llama", Provider: "selfhosted"}
)

func TestEvaluate(t *testing.T) {
	cfg, err := Parse([]byte(`{"eu-only":{"regions":["eu"]},"us-watch":{"regions":["us"],"mode":"monitor"}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := mustSet(t, cfg)
	tests := []struct {
		name, policy string
		model        *catalog.Model
		allowed      bool
		rule         string
		enforced     bool
	}{
		{"public allows any provider and region", "public", unknown, true, "", false},
		{"confidential allows bedrock in us-east-1", "confidential", nova, true, "", false},
		{"confidential refuses another provider", "confidential", gpt, false, RuleProvider, true},
		{"confidential refuses bedrock outside us-east-1", "confidential", novaEU, false, RuleRegion, true},
		{"a region covers its sub-regions", "internal", nova, true, "", false},
		{"every region of a model must be allowed", "eu-only", gemini, false, RuleRegion, true},
		{"a model in an allowed sub-region passes", "eu-only", novaEU, true, "", false},
		{"a model with no regions has unknown residency", "eu-only", unknown, false, RuleRegion, true},
		{"a monitor-mode breach is recorded, not enforced", "us-watch", novaEU, false, RuleRegion, false},
		{"internal (monitor) records a model without regions", "internal", unknown, false, RuleRegion, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := s.Lookup(tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			v := a.Evaluate(tt.model)
			if v.Allowed != tt.allowed || v.Rule != tt.rule || v.Enforced != tt.enforced || v.Model != tt.model.Name {
				t.Fatalf("verdict %+v, want allowed=%v rule=%q enforced=%v", v, tt.allowed, tt.rule, tt.enforced)
			}
			if !tt.allowed && (!strings.Contains(v.Message, tt.model.Name) || !strings.Contains(v.Message, tt.rule) || !strings.Contains(v.Message, tt.policy)) {
				t.Errorf("message %q does not name the model, the policy and the rule", v.Message)
			}
			var f *fault.Error
			gotErr := v.Err()
			if tt.enforced != (gotErr != nil) {
				t.Fatalf("Err() = %v, want an error: %v", gotErr, tt.enforced)
			}
			if gotErr != nil && (!errors.As(gotErr, &f) || f.K != fault.Forbidden || f.Title != "Access denied" || f.Message != v.Message) {
				t.Errorf("Err() = %#v, want 403 Access denied with the verdict's message", gotErr)
			}
		})
	}
}

func TestCheckChainRefusesWholeChain(t *testing.T) {
	a, _ := mustSet(t, nil).Lookup("confidential")
	verdicts, err := a.CheckChain([]*catalog.Model{nova, gpt, gemini})
	if len(verdicts) != 3 || !verdicts[0].Allowed || verdicts[1].Allowed || verdicts[2].Allowed {
		t.Fatalf("verdicts %+v", verdicts)
	}
	if err == nil || !strings.Contains(err.Error(), gpt.Name) {
		t.Errorf("err = %v, want the first refused model (%s) named", err, gpt.Name)
	}
	mon, _ := mustSet(t, nil).Lookup("internal")
	if _, err := mon.CheckChain([]*catalog.Model{unknown, gpt}); err != nil {
		t.Errorf("monitor mode refused a chain: %v", err)
	}
}
