package policycheck

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/policy"
)

// status is a stand-in for a surface's mapping.
func status(err error) (int, string, string) {
	var f *fault.Error
	if errors.As(err, &f) {
		return map[fault.Kind]int{fault.InvalidRequest: 400, fault.Forbidden: 403, fault.QuotaExceeded: 402}[f.K], f.Title, f.Message
	}
	return 500, "Internal error", "internal error"
}

func TestBuild(t *testing.T) {
	set, _ := policy.NewSet(nil)
	applied, _ := set.Lookup("confidential")
	left := 3
	denied := fault.New(fault.Forbidden, "Access denied", "model openai/gpt-5 is not allowed")
	tests := []struct {
		name    string
		in      Inputs
		allowed bool
		failed  string // the check that fails, with its status
		status  int
	}{
		{"every check passes", Inputs{Models: []string{"a"}, Policy: applied, PointsRemaining: &left}, true, "", 0},
		{"invalid input fails input with 400 and skips the rest",
			Inputs{Input: fault.Invalid("messages", "messages is required"), ModelAccess: ErrNotChecked, PolicyErr: ErrNotChecked, PolicyAccess: ErrNotChecked, Quota: ErrNotChecked},
			false, "input", 400},
		{"a model the policy denies fails policy access with 403", Inputs{Models: []string{"a"}, Policy: applied, PolicyAccess: denied}, false, "smltp_policy_access", 403},
		{"no points left fails quota", Inputs{Models: []string{"a"}, Policy: applied, Quota: fault.New(fault.QuotaExceeded, "Completion limit exceeded", "0 points left")}, false, "quota", 402},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Build(tt.in, status)
			if r.Allowed != tt.allowed || !r.Success || !r.DryRun {
				t.Fatalf("allowed %v, want %v", r.Allowed, tt.allowed)
			}
			raw, _ := json.Marshal(r)
			var m map[string]map[string]map[string]any
			_ = json.Unmarshal(raw, &m)
			for _, name := range []string{"input", "model_access", "smltp_policy", "smltp_policy_access", "quota"} {
				c := m["checks"][name]
				if _, ok := c["passed"]; !ok {
					t.Errorf("check %s has no passed: %v", name, c)
				}
				if name == tt.failed && (c["passed"] != false || c["status"] != float64(tt.status) || c["error"] == nil || c["message"] == nil) {
					t.Errorf("failed check %s = %v, want status %d with error and message", name, c, tt.status)
				}
			}
			if tt.allowed && m["checks"]["smltp_policy"]["applied"].(map[string]any)["policy_hash"] != applied.Hash {
				t.Errorf("applied policy missing: %s", raw)
			}
		})
	}
}

func TestPointsRequiredIsTheMostExpensiveModel(t *testing.T) {
	got := PointsRequired([]*catalog.Model{{Points: 1}, {Points: 5}, {Points: 2}})
	if got != 5 {
		t.Errorf("PointsRequired = %d, want 5", got)
	}
}

// Each check's name puts a conclusion under that check's own member of the answer, and no other.
func TestResultIsTheNamedCheck(t *testing.T) {
	members := map[Name]string{Input: "input", ModelAccess: "model_access", SMLTPPolicy: "smltp_policy",
		SMLTPPolicyAccess: "smltp_policy_access", Quota: "quota", CircuitBreaker: "circuit_breaker", RateLimit: "rate_limit"}
	for n, member := range members {
		var in Inputs
		*in.Result(n) = fault.Invalid("x", "refused")
		raw, err := json.Marshal(Build(in, status).Checks)
		if err != nil {
			t.Fatal(err)
		}
		var checks map[string]struct{ Passed bool }
		if err := json.Unmarshal(raw, &checks); err != nil {
			t.Fatal(err)
		}
		for m, c := range checks {
			if c.Passed == (m == member) {
				t.Errorf("a refusal under %s: %s passed=%v", member, m, c.Passed)
			}
		}
	}
}
