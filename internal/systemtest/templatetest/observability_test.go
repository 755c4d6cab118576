package templatetest

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/api/messagesapi"
	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
	"github.com/secureai-gateway/gateway/internal/api/responsesapi"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/metrics"
)

// emfSeries are the series the Lambda output writes, as "<namespace> <metric> <dimension,…>"
// (dimension names sorted): read from the records metrics.EMF writes for a request that used
// every part of one (a streamed, billed answer after a failover, with a refusal count), a breaker
// opening, a webhook delivery and unpublished events.
func emfSeries(t *testing.T) map[string]bool {
	t.Helper()
	var buf bytes.Buffer
	e := metrics.NewEMF(&buf)
	e.Add(&metrics.Request{Surface: openaiapi.Surface, Outcome: "ok", Stream: true, Served: "m/b",
		Lines:  []chain.Attempt{{Model: "m/a", Status: chain.Failed, Reason: chain.Timeout}, {Model: "m/b", Status: chain.Served}},
		Billed: [2]bool{true}, First: chain.Transition{Failed: "m/a", Reason: chain.Timeout, Next: "m/b"}})
	e.BreakerOpened("key", "auto")
	e.WebhookDelivery(metrics.Delivered)
	e.EventsUnpublished(metrics.Lost, 1)
	series := map[string]bool{}
	for line := range strings.Lines(buf.String()) {
		var rec struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name string }
				}
			} `json:"_aws"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("an EMF record is not JSON: %v\n%s", err, line)
		}
		for _, d := range rec.AWS.CloudWatchMetrics {
			for _, dims := range d.Dimensions {
				for _, m := range d.Metrics {
					series[seriesKey(d.Namespace, m.Name, dims)] = true
				}
			}
		}
	}
	if len(series) == 0 {
		t.Fatal("the EMF output wrote no series")
	}
	return series
}

func seriesKey(namespace, metric string, dims []string) string {
	dims = slices.Sorted(slices.Values(dims))
	return namespace + " " + metric + " " + strings.Join(dims, ",")
}

// search matches the metric of a SEARCH expression: {namespace,dimension,…} MetricName="name".
var search = regexp.MustCompile(`\{([^}]*)\}\s*MetricName="([^"]+)"`)

// subValue stands for every ${…} of the dashboard's Fn::Sub, so its JSON can be read.
var subValue = regexp.MustCompile(`\$\{[^}]+\}`)

// The dashboard, every metric it reads from the gateway's namespace, and the failover alarms read
// series the EMF output really writes — same namespace, metric names and dimension sets — so no
// panel stays empty for a renamed metric; the alarms' Outcome values are the error kinds of an
// exhausted chain (all_models_failed), their Surface values the surfaces, each read by both
// alarms, so a failing surface cannot go unnoticed; both alarms notify.
func TestTheDashboardAndAlarmsReadTheEMFSeries(t *testing.T) {
	series := emfSeries(t)
	c := transformed(t, nil)
	surfaces := []string{openaiapi.Surface, classicapi.Surface, messagesapi.Surface, responsesapi.Surface}

	if ids := c.ofType("AWS::CloudWatch::Dashboard"); len(ids) != 1 {
		t.Fatalf("dashboards %v, want one", ids)
	}
	body, _ := dig(c.props(t, "Dashboard"), "DashboardBody", "Fn::Sub").(string)
	var dash struct {
		Widgets []struct {
			Properties struct {
				Title   string
				Metrics [][]any
			}
		}
	}
	if err := json.Unmarshal([]byte(subValue.ReplaceAllString(body, "x")), &dash); err != nil {
		t.Fatalf("the dashboard body is not JSON once substituted: %v", err)
	}
	read := 0
	check := func(where, namespace, metric string, dims map[string]string) {
		t.Helper()
		if namespace != metrics.Namespace {
			return // API Gateway, Lambda, SQS
		}
		read++
		names := make([]string, 0, len(dims))
		for k := range dims {
			names = append(names, k)
		}
		if key := seriesKey(namespace, metric, names); !series[key] {
			t.Errorf("%s reads %s, which the EMF output never writes", where, key)
		}
		if s, ok := dims["Surface"]; ok && s != "" && !slices.Contains(surfaces, s) {
			t.Errorf("%s: Surface %q is no surface", where, s)
		}
	}
	for _, w := range dash.Widgets {
		for _, row := range w.Properties.Metrics {
			if len(row) == 0 {
				continue
			}
			if expr, ok := row[0].(map[string]any); ok {
				for _, m := range search.FindAllStringSubmatch(expr["expression"].(string), -1) {
					parts := strings.Split(m[1], ",")
					dims := map[string]string{}
					for _, d := range parts[1:] {
						dims[strings.TrimSpace(d)] = ""
					}
					check(w.Properties.Title, strings.TrimSpace(parts[0]), m[2], dims)
				}
				continue
			}
			dims := map[string]string{}
			for i := 2; i+1 < len(row); i += 2 {
				k, _ := row[i].(string)
				v, _ := row[i+1].(string)
				dims[k] = v
			}
			check(w.Properties.Title, row[0].(string), row[1].(string), dims)
		}
	}
	if read == 0 {
		t.Error("the dashboard reads nothing from the gateway's namespace")
	}

	exhausted := []string{fault.ChainExhausted.String(), fault.ChainRateLimited.String()}
	for _, id := range []string{"FailoverRateAlarm", "AllModelsFailedAlarm"} {
		p := c.props(t, id)
		var outcomes []string
		read := map[string]bool{} // "<metric> <surface>"
		for _, m := range asList(dig(p, "Metrics")) {
			stat := dig(m, "MetricStat", "Metric")
			if stat == nil {
				continue // the metric math
			}
			dims := map[string]string{}
			for _, d := range asList(dig(stat, "Dimensions")) {
				dims[dig(d, "Name").(string)], _ = dig(d, "Value").(string)
			}
			check(id, dig(stat, "Namespace").(string), dig(stat, "MetricName").(string), dims)
			if o, ok := dims["Outcome"]; ok {
				outcomes = append(outcomes, o)
			}
			read[dig(stat, "MetricName").(string)+" "+dims["Surface"]] = true
		}
		metrics := []string{"Failovers", "Requests"}
		if id == "AllModelsFailedAlarm" {
			metrics = []string{"Requests"}
			slices.Sort(outcomes)
			var want []string
			for range surfaces {
				want = append(want, exhausted...)
			}
			if slices.Sort(want); !slices.Equal(outcomes, want) {
				t.Errorf("%s reads outcomes %v, want %v on each surface", id, outcomes, exhausted)
			}
		}
		for _, s := range surfaces {
			for _, m := range metrics {
				if !read[m+" "+s] {
					t.Errorf("%s does not read %s of the %s surface", id, m, s)
				}
			}
		}
		for _, key := range []string{"AlarmActions", "OKActions"} {
			if len(asList(dig(p, key))) == 0 {
				t.Errorf("%s has no %s", id, key)
			}
		}
	}

	for _, q := range []string{"OneRequestQuery", "FailoversByReasonQuery", "ServerErrorCausesQuery"} {
		p := c.props(t, q)
		if dig(p, "QueryString") == "" || len(asList(dig(p, "LogGroupNames"))) == 0 {
			t.Errorf("saved query %s: %v", q, p)
		}
	}
}
