package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/provider"
)

// failover is a streamed request on the OpenAI surface whose primary failed with a 500 and whose
// fallback served, billed.
func failover() completion.Outcome {
	return completion.Outcome{
		RequestID: "req_123", Key: &apikey.Key{ID: "key_secret_id", UserID: "user_42"}, Surface: "openai", Stream: true,
		Served: "demo/ok", Usage: &provider.Usage{PromptTokens: 12, CompletionTokens: 34},
		Report: chain.Report{Occurred: true, Attempts: []chain.Attempt{
			{Model: "demo/error-500", Status: chain.Failed, Reason: chain.ServerError, LatencyMS: 40},
			{Model: "demo/ok", Status: chain.Served, LatencyMS: 120},
		}},
		Bill: &billing.Bill{UserID: "user_42", Model: "demo/ok", Micros: 2500},
	}
}

func TestTransitionsAreTheChainsFailovers(t *testing.T) {
	r := Request{Lines: []chain.Attempt{
		{Model: "a", Status: chain.Failed, Reason: chain.RateLimit},
		{Model: "a", Status: chain.Failed, Reason: chain.ServerError, Retry: 1},
		{Model: "b", Status: chain.Skipped, Reason: chain.Unhealthy},
		{Model: "c", Status: chain.Failed, Reason: chain.Timeout},
		{Model: "c", Status: chain.Served, Retry: 1},
		{Model: "d", Status: chain.Resumed, Reason: chain.ConnectionError},
	}}
	var got []chain.Transition
	r.Transitions(func(t chain.Transition) bool { got = append(got, t); return true })
	want := []chain.Transition{{Failed: "a", Reason: chain.ServerError, Next: "c"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("transitions %+v, want %+v", got, want)
	}

	// Hedges: a is hedged by b, both fail, c follows b (the later started) and is hedged by d,
	// which loses.
	r = Request{Lines: []chain.Attempt{
		{Model: "a", Status: chain.Failed, Reason: chain.Timeout},
		{Model: "b", Status: chain.Failed, Reason: chain.ServerError, Hedge: true},
		{Model: "c", Status: chain.Served},
		{Model: "d", Status: chain.Cancelled, Reason: chain.HedgeLost, Hedge: true},
	}}
	got = nil
	r.Transitions(func(t chain.Transition) bool { got = append(got, t); return true })
	want = []chain.Transition{
		{Failed: "a", Reason: chain.HedgeAfter, Next: "b"},
		{Failed: "b", Reason: chain.ServerError, Next: "c"},
		{Failed: "c", Reason: chain.HedgeAfter, Next: "d"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hedged transitions %+v, want %+v", got, want)
	}
}

// A model served by several deployments: its attempts are counted under each deployment's
// provider, and a failover between two deployments of it names both.
func TestDeploymentsAreTheAttemptsProviders(t *testing.T) {
	o := completion.Outcome{Surface: "openai", Served: "x/claude", Report: chain.Report{Occurred: true, Attempts: []chain.Attempt{
		{Model: "x/claude", Provider: "anthropic", Status: chain.Failed, Reason: chain.ServerError},
		{Model: "x/claude", Provider: "bedrock", Status: chain.Served},
	}}}
	p := NewPrometheus(nil)
	p.Finished(context.Background(), o)
	families := scrape(t, p)
	if f, s := sample(families, "attempts", "x/claude", "anthropic", "failed"), sample(families, "attempts", "x/claude", "bedrock", "served"); f != 1 || s != 1 {
		t.Errorf("attempts by deployment: failed on anthropic %v, served on bedrock %v", f, s)
	}
	r := Request{Lines: o.Report.Attempts}
	var got []chain.Transition
	r.Transitions(func(t chain.Transition) bool { got = append(got, t); return true })
	want := []chain.Transition{{Failed: "x/claude", FailedProvider: "anthropic", Reason: chain.ServerError, Next: "x/claude", NextProvider: "bedrock"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("transitions %+v, want %+v", got, want)
	}
}

func TestPrometheusCountsARequest(t *testing.T) {
	p := NewPrometheus(nil)
	p.Finished(context.Background(), failover())
	refused := completion.Outcome{Surface: "classic", Err: &limits.Exceeded{Period: limits.Minute, Limit: 1}, Kind: fault.RateLimited}
	p.Finished(context.Background(), refused)
	points := completion.Outcome{Surface: "classic", Err: fault.New(fault.QuotaExceeded, "x", "y").WithCode("points_exhausted"), Kind: fault.QuotaExceeded}
	p.Finished(context.Background(), points)
	BreakerAudit(p, nil)(context.Background(), breaker.Event{Action: "open", Actor: "admin:key_secret_id", State: breaker.State{Subject: breaker.Subject{Kind: "key", ID: "key_secret_id"}}})
	p.WebhookDelivery(Retrying)
	p.EventsUnpublished(Lost, 2)

	families := scrape(t, p)
	got := func(field string, lvs ...string) float64 { return sample(families, field, lvs...) }
	for _, c := range []struct {
		name string
		want float64
		got  float64
	}{
		{"requests ok", 1, got("requests", "openai", "ok", "")},
		{"requests refused", 1, got("requests", "classic", "rate_limited", "")},
		{"failover", 1, got("failovers", "demo/error-500", "demo/ok", "server_error")},
		{"attempt failed", 1, got("attempts", "demo/error-500", "demo", "failed")},
		{"attempt served", 1, got("attempts", "demo/ok", "demo", "served")},
		{"input tokens", 12, got("tokens", "demo/ok", "input", "")},
		{"output tokens", 34, got("tokens", "demo/ok", "output", "")},
		{"cost", 2500, got("cost", "demo/ok", "", "")},
		{"request limit", 1, got("refusals", "requests", "", "")},
		{"points", 1, got("refusals", "points", "", "")},
		{"breaker", 1, got("breakers", "key", "admin", "")},
		{"webhook", 1, got("webhooks", Retrying, "", "")},
		{"events", 2, got("unpublished", Lost, "", "")},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if h := histogram(families, "secureai_time_to_first_token_seconds", "demo/ok"); h.GetSampleSum() != 0.12 || h.GetSampleCount() != 1 {
		t.Errorf("time to first token %v", h)
	}
	if h := histogram(families, "secureai_attempt_duration_seconds", "demo/error-500"); h.GetSampleSum() != 0.04 || h.GetSampleCount() != 1 {
		t.Errorf("attempt latency %v", h)
	}
}

// scrape reads the registry through its handler and parses the text with Prometheus's parser.
func scrape(t *testing.T, p *Prometheus) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	p.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// fields maps the Prometheus struct's fields to their instruments, for the tests.
var fields = map[string]*Instrument{"requests": &Requests, "failovers": &Failovers, "attempts": &Attempts, "tokens": &Tokens,
	"cost": &Cost, "refusals": &Refusals, "breakers": &BreakerOpens, "webhooks": &Webhooks, "unpublished": &Unpublished}

// sample is the counter of field's instrument with the label values lvs (0 when absent).
func sample(families map[string]*dto.MetricFamily, field string, lvs ...string) float64 {
	in := fields[field]
	for _, m := range families["secureai_"+in.Name].GetMetric() {
		if labelsAre(m, in.Labels, lvs) {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func histogram(families map[string]*dto.MetricFamily, name, model string) *dto.Histogram {
	for _, m := range families[name].GetMetric() {
		if labelsAre(m, []string{"model"}, []string{model}) {
			return m.GetHistogram()
		}
	}
	return nil
}

func labelsAre(m *dto.Metric, names, values []string) bool {
	if len(m.GetLabel()) != len(names) {
		return false
	}
	for i, n := range names {
		ok := false
		for _, l := range m.GetLabel() {
			ok = ok || l.GetName() == n && l.GetValue() == values[i]
		}
		if !ok {
			return false
		}
	}
	return true
}

// A failover request's record is one JSON line that meets the EMF specification: its schema,
// and every dimension and metric a directive names is a member of the record, a dimension a
// string and a metric a number.
func TestEMFRecordOfAFailover(t *testing.T) {
	var out bytes.Buffer
	e := NewEMF(&out)
	e.Now = func() time.Time { return time.UnixMilli(1_700_000_000_123) }
	e.Finished(context.Background(), failover())
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d records, want one:\n%s", len(lines), out.String())
	}
	rec := checkEMF(t, lines[0])

	// The directives: namespace, dimension sets and metrics.
	type directive struct {
		Namespace  string
		Dimensions [][]string
		Metrics    []struct{ Name, Unit string }
	}
	var meta struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []directive
		} `json:"_aws"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &meta); err != nil {
		t.Fatal(err)
	}
	if meta.AWS.Timestamp != 1_700_000_000_123 {
		t.Errorf("timestamp %d", meta.AWS.Timestamp)
	}
	got := map[string]string{} // "dimension sets" → "metric:unit …"
	for _, d := range meta.AWS.CloudWatchMetrics {
		if d.Namespace != "SecureAIGateway" {
			t.Errorf("namespace %q", d.Namespace)
		}
		var ms []string
		for _, m := range d.Metrics {
			ms = append(ms, m.Name+":"+m.Unit)
		}
		got[fmt.Sprint(d.Dimensions)] = strings.Join(ms, " ")
	}
	want := map[string]string{
		"[[Surface Outcome] [Surface]]": "Requests:Count Attempts:Count FailedAttempts:Count Retries:Count ResumedStreams:Count LimitRefusals:Count",
		"[[Model]]":                     "Latency:Milliseconds InputTokens:Count OutputTokens:Count TimeToFirstToken:Milliseconds CostMicroUSD:None",
		"[[FailedModel Reason] [FailedModel NextModel Reason] [Surface]]": "Failovers:Count",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("directives\n%v\nwant\n%v", got, want)
	}
	// The values, and nothing that names the key or its user.
	wantValues := map[string]any{
		"Surface": "openai", "Outcome": "ok", "Model": "demo/ok", "FailedModel": "demo/error-500", "NextModel": "demo/ok", "Reason": "server_error",
		"Requests": 1.0, "Attempts": 2.0, "FailedAttempts": 1.0, "Retries": 0.0, "ResumedStreams": 0.0, "LimitRefusals": 0.0,
		"Latency": 120.0, "TimeToFirstToken": 120.0, "InputTokens": 12.0, "OutputTokens": 34.0, "CostMicroUSD": 2500.0, "Failovers": 1.0,
		"RequestId": "req_123",
	}
	delete(rec, "_aws")
	if !reflect.DeepEqual(rec, wantValues) {
		t.Errorf("members\n%v\nwant\n%v", rec, wantValues)
	}
	if strings.Contains(lines[0], "key_secret_id") || strings.Contains(lines[0], "user_42") {
		t.Errorf("the record names the key or the user: %s", lines[0])
	}
}

// The hooks' records meet the specification too.
func TestEMFHookRecords(t *testing.T) {
	var out bytes.Buffer
	e := NewEMF(&out)
	BreakerAudit(e, nil)(context.Background(), breaker.Event{Action: "open", Actor: breaker.ActorAuto, State: breaker.State{Subject: breaker.Subject{Kind: "user", ID: "user_42"}}})
	e.WebhookDelivery(Failed)
	e.EventsUnpublished(Outbox, 3)
	e.Finished(context.Background(), completion.Outcome{Err: errors.New("boom")}) // refused before a chain: no model
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d records:\n%s", len(lines), out.String())
	}
	for _, l := range lines {
		checkEMF(t, l)
	}
	if strings.Contains(out.String(), "user_42") {
		t.Errorf("a record names the user: %s", out.String())
	}
	if rec := checkEMF(t, lines[2]); rec["Fate"] != "outbox" || rec["EventsUnpublished"] != 3.0 {
		t.Errorf("events record %v", rec)
	}
}

// checkEMF validates one record against the specification and returns its members.
func checkEMF(t *testing.T, line string) map[string]any {
	t.Helper()
	schemaFile, err := os.Open("testdata/emf.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer schemaFile.Close()
	c := jsonschema.NewCompiler()
	if err := c.AddResource("emf.schema.json", schemaFile); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("emf.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatalf("not JSON: %v: %s", err, line)
	}
	if err := schema.Validate(rec); err != nil {
		t.Errorf("%s: %v", line, err)
	}
	// The references a schema cannot check.
	meta := rec["_aws"].(map[string]any)
	for _, d := range meta["CloudWatchMetrics"].([]any) {
		d := d.(map[string]any)
		for _, set := range d["Dimensions"].([]any) {
			for _, dim := range set.([]any) {
				if _, ok := rec[dim.(string)].(string); !ok {
					t.Errorf("dimension %s is not a string member: %s", dim, line)
				}
			}
		}
		for _, m := range d["Metrics"].([]any) {
			name := m.(map[string]any)["Name"].(string)
			if _, ok := rec[name].(float64); !ok {
				t.Errorf("metric %s is not a number member: %s", name, line)
			}
		}
	}
	return rec
}

// failoverCatalog is a catalog of failover's models: the benchmarks count them as a deployment
// does, through Catalogued.
func failoverCatalog() *catalog.Catalog {
	return &catalog.Catalog{Providers: map[string]catalog.ProviderConfig{"demo": {Type: "openai"}},
		Models: map[string]*catalog.Model{"demo/ok": {Provider: "demo", Upstream: "ok"}, "demo/error-500": {Provider: "demo", Upstream: "error-500"}}}
}

// The observer's cost per request (issue 19, item 5): go test -bench Finished ./internal/metrics
func BenchmarkPrometheusFinished(b *testing.B) {
	p := Catalogued(NewPrometheus(nil), failoverCatalog())
	o := failover()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p.Finished(ctx, o)
	}
}

func BenchmarkEMFFinished(b *testing.B) {
	e := Catalogued(NewEMF(io.Discard), failoverCatalog())
	o := failover()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		e.Finished(ctx, o)
	}
}

// Issue 34.3: a provider with any_model admits names its callers choose; each distinct name must
// not become series of its own. Through Catalogued, a model outside the catalog is counted as
// "<provider>/other" by both outputs, however many names callers send, and the report the caller
// gets (shared with the other observers) keeps the names it had.
func TestModelsOutsideTheCatalogAreCountedAsTheirProvidersOther(t *testing.T) {
	cat := &catalog.Catalog{
		Providers: map[string]catalog.ProviderConfig{"demo": {Type: "openai"}, "loose": {Type: "openai", AnyModel: true}},
		Models:    map[string]*catalog.Model{"demo/error-500": {Provider: "demo", Upstream: "error-500"}},
	}
	// A chain of a catalog model and two names only the any_model provider knows: the first
	// fails, the second serves.
	outcome := func(n int) completion.Outcome {
		o := failover()
		o.Report.Attempts = []chain.Attempt{
			{Model: "demo/error-500", Status: chain.Failed, Reason: chain.ServerError, LatencyMS: 40},
			{Model: fmt.Sprintf("loose/a-%d", n), Status: chain.Failed, Reason: chain.Timeout, LatencyMS: 50},
			{Model: fmt.Sprintf("loose/b-%d", n), Status: chain.Served, LatencyMS: 120},
		}
		o.Served = o.Report.Attempts[2].Model
		return o
	}

	p := NewPrometheus(nil)
	rec := Catalogued(p, cat)
	o := outcome(0)
	rec.Finished(context.Background(), o)
	if o.Report.Attempts[1].Model != "loose/a-0" || o.Report.Attempts[2].Model != "loose/b-0" {
		t.Errorf("the shared report was renamed: %+v", o.Report.Attempts)
	}
	series := func() (n int, labels []string) {
		for _, f := range scrape(t, p) {
			if !strings.HasPrefix(f.GetName(), "secureai_") {
				continue
			}
			for _, m := range f.GetMetric() {
				n++
				for _, l := range m.GetLabel() {
					if strings.Contains(l.GetValue(), "/") {
						labels = append(labels, l.GetValue())
					}
				}
			}
		}
		return n, labels
	}
	before, labels := series()
	for _, l := range labels {
		if l != "demo/error-500" && l != "loose/other" {
			t.Errorf("a series is labelled %q, a name outside the catalog", l)
		}
	}
	for n := 1; n <= 20; n++ {
		rec.Finished(context.Background(), outcome(n))
	}
	if after, _ := series(); after != before {
		t.Errorf("20 more distinct any_model names made %d series from %d", after, before)
	}
	families := scrape(t, p)
	if got := sample(families, "attempts", "loose/other", "loose", "served"); got != 21 {
		t.Errorf("served attempts of loose/other: %v, want 21", got)
	}
	if got := sample(families, "failovers", "demo/error-500", "loose/other", "server_error"); got != 21 {
		t.Errorf("failovers to loose/other: %v, want 21", got)
	}

	var out bytes.Buffer
	Catalogued(NewEMF(&out), cat).Finished(context.Background(), outcome(0))
	r := checkEMF(t, strings.TrimSuffix(out.String(), "\n"))
	if r["Model"] != "loose/other" || r["FailedModel"] != "demo/error-500" || r["NextModel"] != "loose/other" {
		t.Errorf("EMF dimensions Model %v, FailedModel %v, NextModel %v; want loose/other for the names outside the catalog",
			r["Model"], r["FailedModel"], r["NextModel"])
	}

	// A failover told as it happens is named the same way.
	var told completion.Failover
	Catalogued(failoverSpy{Recorder: p, got: &told}, cat).FailedOver(context.Background(),
		completion.Failover{Transition: chain.Transition{Failed: "loose/x", Next: "demo/error-500"}})
	if told.Failed != "loose/other" || told.Next != "demo/error-500" {
		t.Errorf("failover told as %s → %s", told.Failed, told.Next)
	}
}

// failoverSpy keeps the failover it is told.
type failoverSpy struct {
	Recorder
	got *completion.Failover
}

func (s failoverSpy) FailedOver(_ context.Context, f completion.Failover) { *s.got = f }
