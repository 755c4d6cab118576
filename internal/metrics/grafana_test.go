package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// exported returns every family the local registry can export — read from its descriptors, so a
// counter no request has touched yet is there too — with its labels.
func exported(t *testing.T) map[string][]string {
	t.Helper()
	descs := make(chan *prometheus.Desc)
	go func() {
		NewPrometheus(nil).Registry().Describe(descs)
		close(descs)
	}()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	labels := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	out := map[string][]string{}
	for d := range descs {
		s := d.String()
		m := fq.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("cannot read a descriptor: %s", s)
		}
		var ls []string
		if l := labels.FindStringSubmatch(s); l != nil && l[1] != "" {
			ls = strings.Split(l[1], ",")
		}
		out[m[1]] = ls
	}
	if len(out) == 0 {
		t.Fatal("the registry describes no family")
	}
	return out
}

var (
	metricName = regexp.MustCompile(`\b[a-zA-Z_:][a-zA-Z0-9_:]*\b`)
	grouping   = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	selector   = regexp.MustCompile(`\{([^}]*)\}`)
	matcher    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
)

// The Grafana dashboard shipped in docs/grafana is importable JSON whose every query reads
// families the gateway's /metrics exports (a histogram by its _bucket series), by labels those
// families have: no panel stays empty for a name the gateway does not write.
func TestTheGrafanaDashboardReadsExportedMetrics(t *testing.T) {
	families := exported(t)
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs/grafana/secureai-gateway.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Inputs []struct{ Name, PluginID string } `json:"__inputs"`
		Panels []struct {
			Title      string
			Datasource struct{ Type, UID string }
			Targets    []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if len(dash.Inputs) != 1 || dash.Inputs[0].PluginID != "prometheus" {
		t.Errorf("inputs %+v, want one Prometheus data source asked for on import", dash.Inputs)
	}
	if len(dash.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	// PromQL's own words, which are no metric names.
	words := []string{"sum", "rate", "increase", "histogram_quantile", "by", "without"}
	for _, p := range dash.Panels {
		if p.Datasource.Type != "prometheus" || p.Datasource.UID != "${"+dash.Inputs[0].Name+"}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: data source %+v with %d queries, want the imported Prometheus", p.Title, p.Datasource, len(p.Targets))
		}
		for _, q := range p.Targets {
			expr := q.Expr
			var labels []string
			for _, m := range grouping.FindAllStringSubmatch(expr, -1) {
				for _, l := range strings.Split(m[1], ",") {
					labels = append(labels, strings.TrimSpace(l))
				}
			}
			for _, m := range selector.FindAllStringSubmatch(expr, -1) {
				for _, l := range matcher.FindAllStringSubmatch(m[1], -1) {
					labels = append(labels, l[1])
				}
			}
			bare := selector.ReplaceAllString(grouping.ReplaceAllString(expr, ""), "")
			bare = regexp.MustCompile(`\[[^\]]*\]|"[^"]*"`).ReplaceAllString(bare, "")
			var have []string // the labels of the families the query reads
			read := 0
			for _, name := range metricName.FindAllString(bare, -1) {
				if slices.Contains(words, name) {
					continue
				}
				family := name
				if base, ok := strings.CutSuffix(name, "_bucket"); ok {
					family = base
					have = append(have, "le")
				}
				ls, ok := families[family]
				if !ok {
					t.Errorf("panel %q reads %s, which the gateway does not export (query %s)", p.Title, name, expr)
					continue
				}
				read++
				have = append(have, ls...)
			}
			if read == 0 {
				t.Errorf("panel %q: query %s reads no metric", p.Title, expr)
			}
			for _, l := range labels {
				if !slices.Contains(have, l) {
					t.Errorf("panel %q: label %s is on none of the families query %s reads", p.Title, l, expr)
				}
			}
		}
	}
}
