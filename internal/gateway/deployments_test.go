package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
)

// deployEnv is a gateway whose models are served by deployments on two providers, "east" and
// "west", each its own fault-injecting fake so the calls each deployment received are counted
// apart. Its "internal" policy keeps data in the EU (enforced).
type deployEnv struct {
	hedgeEnv
	east, west *openaifake.Server
}

func newDeployEnv(t *testing.T) *deployEnv {
	t.Helper()
	east, west := openaifake.New(300*time.Millisecond), openaifake.New(300*time.Millisecond)
	eastSrv, westSrv := httptest.NewServer(east), httptest.NewServer(west)
	t.Cleanup(eastSrv.Close)
	t.Cleanup(westSrv.Close)
	dep := func(provider, upstream, region string, weight int) catalog.Deployment {
		return catalog.Deployment{Provider: provider, Upstream: upstream, Region: region, Weight: weight}
	}
	model := func(name string, ds ...catalog.Deployment) *catalog.Model {
		return &catalog.Model{Name: name, Points: 1, ContextWindow: 8192, Deployments: ds}
	}
	cat := &catalog.Catalog{
		Providers: map[string]catalog.ProviderConfig{
			"east": {Type: "openai", BaseURL: eastSrv.URL + "/v1"},
			"west": {Type: "openai", BaseURL: westSrv.URL + "/v1"},
		},
		Models: map[string]*catalog.Model{
			"fake/failing-first": model("fake/failing-first", dep("east", "error-500", "eu-west-1", 0), dep("west", "ok", "eu-central-1", 0)),
			"fake/residency":     model("fake/residency", dep("east", "ok", "us-east-1", 0), dep("west", "ok", "eu-west-1", 0)),
			"fake/us-only":       model("fake/us-only", dep("east", "ok", "us-east-1", 0)),
			"fake/weighted":      model("fake/weighted", dep("east", "ok", "eu-west-1", 3), dep("west", "ok", "eu-west-1", 1)),
			"fake/ok":            {Name: "fake/ok", Provider: "east", Upstream: "ok", Regions: []string{"eu-west-1"}},
		},
		SMLTPPolicies: json.RawMessage(`{"internal": {"regions": ["eu"], "mode": "enforce"}}`),
	}
	obs := &recorder{done: make(chan struct{}, 1)}
	deps := gatewaykit.Deps(cat, oneKey{})
	deps.Observer = obs
	deps.Engine.Picker = chain.NewPicker(2026)
	return &deployEnv{hedgeEnv: hedgeEnv{url: gatewaykit.Bare(t, deps), obs: obs}, east: east, west: west}
}

// deployLines is a report as "provider:status:reason" per line, each line checked to name model.
func deployLines(t *testing.T, r chain.Report, model string) string {
	t.Helper()
	var b strings.Builder
	for _, a := range r.Attempts {
		if a.Model != model {
			t.Errorf("a line names model %q, want %q", a.Model, model)
		}
		fmt.Fprintf(&b, "%s:%s:%s ", a.Provider, a.Status, a.Reason)
	}
	return strings.TrimSpace(b.String())
}

// SPEC 3.5a: the first deployment's 500 fails over to the model's second deployment; the
// response's report, the failover event and the served model say so, on both surfaces, plain and
// streaming. The model is listed once.
func TestTheNextDeploymentServesAfterTheFirstFails(t *testing.T) {
	e := newDeployEnv(t)
	for _, s := range hedgeSurfaces {
		for _, stream := range []string{"", `,"stream":true`} {
			t.Run(s.name+stream, func(t *testing.T) {
				status, b, o := e.postDeployed(t, s.path, `{`+s.extra+`,"model":"fake/failing-first"`+stream+`}`)
				want := "east:failed:server_error west:served:"
				if status != 200 || o.Served != "fake/failing-first" || deployLines(t, o.Report, "fake/failing-first") != want {
					t.Fatalf("%d served %q report %q, want %q\n%s", status, o.Served, deployLines(t, o.Report, "fake/failing-first"), want, b)
				}
				if stream == "" {
					a := gjson.GetBytes(b, s.report+".attempts").Array()
					if len(a) != 2 || a[0].Get("provider").String() != "east" || a[0].Get("status").String() != "failed" ||
						a[1].Get("provider").String() != "west" || a[1].Get("status").String() != "served" || !gjson.GetBytes(b, s.report+".occurred").Bool() {
						t.Errorf("the response's report: %s", b)
					}
				} else if !strings.Contains(string(b), `"provider":"east","status":"failed"`) || !strings.Contains(string(b), `"provider":"west","status":"served"`) {
					t.Errorf("the stream's report does not name both deployments: %s", b)
				}
				e.obs.mu.Lock()
				f := e.obs.failovers[len(e.obs.failovers)-1]
				e.obs.mu.Unlock()
				if f.Failed != "fake/failing-first" || f.FailedProvider != "east" || f.Next != "fake/failing-first" || f.NextProvider != "west" || f.Reason != chain.ServerError {
					t.Errorf("failover told %+v, want east → west of one model", f.Transition)
				}
			})
		}
	}
	status, list := e.call(t, "GET", "/v1/models", "")
	n := 0
	for _, m := range list.Get("data").Array() {
		if m.Get("id").String() == "fake/failing-first" {
			n++
			if m.Get("owned_by").String() != "fake" {
				t.Errorf("owned_by %q", m.Get("owned_by").String())
			}
		}
	}
	if status != 200 || n != 1 {
		t.Errorf("GET /v1/models: %d, the model listed %d times: %s", status, n, list.Raw)
	}
}

// A deployment whose region the request's policy forbids is reported skipped and never called;
// the dry run agrees. A model with no allowed deployment is refused whole, as any model is.
func TestAResidencyForbiddenDeploymentIsSkipped(t *testing.T) {
	e := newDeployEnv(t)
	for _, s := range hedgeSurfaces {
		for _, stream := range []string{"", `,"stream":true`} {
			t.Run(s.name+stream, func(t *testing.T) {
				status, b, o := e.postDeployed(t, s.path, `{`+s.extra+`,"model":"fake/residency","smltp_policy":"internal"`+stream+`}`)
				want := "east:skipped:policy_denied west:served:"
				if status != 200 || deployLines(t, o.Report, "fake/residency") != want {
					t.Fatalf("%d report %q, want %q\n%s", status, deployLines(t, o.Report, "fake/residency"), want, b)
				}
			})
		}
	}
	if n := e.east.Calls("ok"); n != 0 {
		t.Errorf("the forbidden deployment was called %d times", n)
	}
	status, check := e.call(t, "POST", "/policy-check", `{"model":"fake/residency","smltp_policy":"internal","messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 || !check.Get("allowed").Bool() {
		t.Errorf("policy-check of a model with an allowed deployment: %d %s", status, check.Raw)
	}
	status, b, _ := e.postDeployed(t, "/v1/chat/completions", `{"model":"fake/us-only","smltp_policy":"internal","messages":[{"role":"user","content":"hi"}]}`)
	if status != 403 || gjson.GetBytes(b, "error.code").String() != "smltp_policy_denied" || e.east.Calls("ok") != 0 {
		t.Errorf("a model whose only deployment is forbidden: %d %s", status, b)
	}
}

// Weights spread a model's requests over its deployments in proportion: 3:1 over 1 000
// requests is within ±5 % of 75 % / 25 %. The gateway's picker is seeded, so the spread is the
// same every run.
func TestWeightsSpreadRequestsByShare(t *testing.T) {
	e := newDeployEnv(t)
	const n = 1000
	served := map[string]int{}
	for i := range n {
		status, b, o := e.postDeployed(t, "/v1/chat/completions", `{"model":"fake/weighted","messages":[{"role":"user","content":"hi"}]}`)
		if status != 200 || len(o.Report.Attempts) != 1 || o.Report.Attempts[0].Status != chain.Served {
			t.Fatalf("request %d: %d %+v %s", i, status, o.Report, b)
		}
		served[o.Report.Attempts[0].Provider]++
	}
	for provider, share := range map[string]float64{"east": 0.75, "west": 0.25} {
		if got := float64(served[provider]) / n; got < share-0.05 || got > share+0.05 {
			t.Errorf("%s served %.3f of requests, want %.2f ± 0.05 (%v)", provider, got, share, served)
		}
	}
	if e.east.Calls("ok")+e.west.Calls("ok") != n {
		t.Errorf("%d + %d upstream calls for %d requests that all served first", e.east.Calls("ok"), e.west.Calls("ok"), n)
	}
}

// A chain entry's deployments count once toward the three models.
func TestADeployedModelCountsOnceTowardTheThree(t *testing.T) {
	e := newDeployEnv(t)
	status, b, o := e.postDeployed(t, "/v1/chat/completions",
		`{"models":["fake/failing-first","fake/residency","fake/weighted"],"messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 || o.Served != "fake/failing-first" || len(o.Report.Attempts) != 2 {
		t.Errorf("three models of two deployments each: %d %+v %s", status, o.Report, b)
	}
}

// postDeployed is post without the timing.
func (e *deployEnv) postDeployed(t *testing.T, path, body string) (int, []byte, completion.Outcome) {
	t.Helper()
	status, b, o, _ := e.post(t, path, body)
	return status, b, o
}

// call sends a request that tells the observer nothing (a listing, a dry run).
func (e *deployEnv) call(t *testing.T, method, path, body string) (int, gjson.Result) {
	t.Helper()
	status, _, b := gatewaykit.Call(t, method, e.url+path, apikey.NewSecret(), body)
	return status, b
}
