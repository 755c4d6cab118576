package templatetest

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// checkovBaseline is testdata/checkov-baseline.json: each accepted finding's check id, why it does
// not apply to this stack, and the resources it is accepted on.
type checkovBaseline map[string]struct {
	Reason    string   `json:"reason"`
	Resources []string `json:"resources"`
}

// checkov (pinned in requirements-checkov.txt, its own venv) scans template.yaml; every finding
// must be in the baseline, with a reason, and every baseline entry must still be found, so the
// baseline says exactly what is accepted. A new finding fails until it is fixed or accepted there.
func TestCheckovFindsOnlyTheBaseline(t *testing.T) {
	root := testenv.RepoRoot(t)
	bin := tool(t, root, ".venv-checkov/bin/checkov")
	cmd := testenv.OfflineCommand(root, bin, "--file", "template.yaml", "--framework", "cloudformation",
		"--quiet", "--compact", "--skip-download", "--output", "json")
	cmd.Env = append(cmd.Env, "BC_SKIP_MAPPING=TRUE")
	out, err := cmd.Output()
	// checkov exits 1 when it finds anything; its report says what.
	var report struct {
		Results struct {
			Failed []struct {
				CheckID  string `json:"check_id"`
				Name     string `json:"check_name"`
				Resource string `json:"resource"`
			} `json:"failed_checks"`
		} `json:"results"`
		Summary struct {
			ParsingErrors int `json:"parsing_errors"`
		} `json:"summary"`
	}
	if jerr := json.Unmarshal(out, &report); jerr != nil {
		t.Fatalf("checkov gave no JSON report (%v, exit %v):\n%s", jerr, err, out)
	}
	if report.Summary.ParsingErrors > 0 {
		t.Fatalf("checkov could not parse template.yaml:\n%s", out)
	}

	b, err := os.ReadFile(filepath.Join(root, "internal/systemtest/templatetest/testdata/checkov-baseline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var baseline checkovBaseline
	if err := json.Unmarshal(b, &baseline); err != nil {
		t.Fatalf("checkov-baseline.json: %v", err)
	}
	accepted := map[string]bool{}
	for id, entry := range baseline {
		if strings.TrimSpace(entry.Reason) == "" {
			t.Errorf("baseline %s accepts %v without a reason", id, entry.Resources)
		}
		for _, r := range entry.Resources {
			accepted[id+" "+r] = true
		}
	}
	found := map[string]bool{}
	for _, f := range report.Results.Failed {
		key := f.CheckID + " " + f.Resource
		found[key] = true
		if !accepted[key] {
			t.Errorf("checkov: %s %q on %s — fix it, or accept it in internal/systemtest/templatetest/testdata/checkov-baseline.json with the reason it does not apply",
				f.CheckID, f.Name, f.Resource)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(accepted)) {
		if !found[key] {
			t.Errorf("baseline accepts %s, which checkov no longer finds: remove it", key)
		}
	}
}
