package gateway_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
)

// GET /metrics on the local server, scraped after a served request and a failover and parsed by
// Prometheus's own text parser, counts both — the failover by its models and reason, the
// attempts by status — and no series is labelled with the key or its user. Only an admin key
// may scrape it.
func TestMetricsCountAServedRequestAndAFailover(t *testing.T) {
	g := gatewaykit.ServeFakes(t, "")
	key := g.NewKey(t, `{"name":"metered","userId":"u-metered"}`)
	_, _, listed := g.Call(t, "GET", "/admin/api-keys", g.Admin, "")
	var keyID string
	for _, k := range listed.Get("apiKeys").Array() {
		if k.Get("name").String() == "metered" {
			keyID = k.Get("id").String()
		}
	}
	if keyID == "" {
		t.Fatalf("no key id in %s", listed.Raw)
	}
	for _, chain := range []string{`"model":"fake/ok"`, `"model":"fake/error-500","fallback_models":["fake/ok"]`} {
		if status, _, body := g.Call(t, "POST", "/v1/chat/completions", key, gatewaykit.ChatBody(chain)); status != 200 {
			t.Fatalf("chat %s: %d %s", chain, status, body.Raw)
		}
	}

	// Issue 34 item 15: a request its client gives up on before any answer is counted apart, as
	// canceled, neither served nor failed.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/v1/chat/completions", strings.NewReader(gatewaykit.ChatBody(`"model":"fake/hang"`)))
	req.Header.Set("Authorization", "Bearer "+key)
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("a request to a model that hangs was answered: %d", res.StatusCode)
	}
	time.Sleep(200 * time.Millisecond) // the gateway sees the connection close and ends the chain

	for _, c := range []struct {
		key  string
		want int
	}{{"", 401}, {key, 403}} {
		if status, _, _ := g.Call(t, "GET", "/metrics", c.key, ""); status != c.want {
			t.Errorf("GET /metrics with key %q: %d, want %d", c.key, status, c.want)
		}
	}
	req, _ = http.NewRequest("GET", g.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+g.Admin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatal(err)
	}

	counter := func(name string, labels ...string) float64 {
		t.Helper()
		for _, m := range families[name].GetMetric() {
			if hasLabels(m, labels) {
				return m.GetCounter().GetValue()
			}
		}
		return 0
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"secureai_requests_total", []string{"surface", "openai", "outcome", "ok"}, 2},
		{"secureai_requests_total", []string{"surface", "openai", "outcome", "canceled"}, 1},
		{"secureai_failovers_total", []string{"from_model", "fake/error-500", "to_model", "fake/ok", "reason", "server_error"}, 1},
		{"secureai_attempts_total", []string{"model", "fake/error-500", "provider", "fake", "status", "failed"}, 1},
		{"secureai_attempts_total", []string{"model", "fake/ok", "provider", "fake", "status", "served"}, 2},
	} {
		if got := counter(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if h := families["secureai_attempt_duration_seconds"]; h.GetType() != dto.MetricType_HISTOGRAM || len(h.GetMetric()) != 2 {
		t.Errorf("attempt latency: %v", h)
	}

	// Every gateway series' labels are among the low-cardinality dimensions; no value anywhere is
	// the key, its id or its user.
	allowed := []string{"surface", "outcome", "from_model", "to_model", "reason", "model", "provider", "status",
		"direction", "limit", "scope", "cause", "fate"}
	secrets := []string{key, keyID, "u-metered", g.Admin}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.HasPrefix(name, "secureai_") && !slices.Contains(allowed, l.GetName()) {
					t.Errorf("%s has the label %s", name, l.GetName())
				}
				for _, s := range secrets {
					if l.GetValue() == s || strings.Contains(l.GetValue(), s) {
						t.Errorf("%s{%s=%q} names the key or its user", name, l.GetName(), l.GetValue())
					}
				}
			}
		}
	}
}

// hasLabels reports whether m has the name/value pairs of labels (and no others).
func hasLabels(m *dto.Metric, labels []string) bool {
	if len(m.GetLabel())*2 != len(labels) {
		return false
	}
	for i := 0; i < len(labels); i += 2 {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == labels[i] && l.GetValue() == labels[i+1]
		}) {
			return false
		}
	}
	return true
}
