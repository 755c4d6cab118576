package chain_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
)

// deployed is a plan naming model m served on each of providers, then model "b".
func deployed(m string, providers ...string) chain.Plan {
	p := chain.Plan{On: chain.AllTriggers}
	for _, prov := range providers {
		p.Targets = append(p.Targets, chain.Target{Model: m, Provider: prov, Timeout: time.Second, FirstTokenTimeout: time.Second})
	}
	p.Targets = append(p.Targets, chain.Target{Model: "b", Timeout: time.Second, FirstTokenTimeout: time.Second})
	return p
}

// byProvider runs each target by its deployment (or its model, when it has none).
func byProvider(by map[string]behavior) chain.Try[string] {
	return func(ctx context.Context, t chain.Target) (string, error) {
		key := t.Model
		if t.Provider != "" {
			key = t.Provider
		}
		return by[key](ctx)
	}
}

// SPEC 3.5a: a model's deployments are tried before the next model; every line and every
// transition names its deployment's provider.
func TestDeploymentsAreTriedBeforeTheNextModel(t *testing.T) {
	var told []chain.Transition
	e := chain.Engine{OnFailover: func(_ context.Context, tr chain.Transition) { told = append(told, tr) }}
	res, err := chain.Run(context.Background(), e, deployed("a", "east", "west"), false,
		byProvider(map[string]behavior{"east": fail(chain.ServerError), "west": serve, "b": serve}))
	if err != nil || res.Served != "a" {
		t.Fatalf("served %q, %v", res.Served, err)
	}
	want := []chain.Attempt{
		{Model: "a", Provider: "east", Status: chain.Failed, Reason: chain.ServerError},
		{Model: "a", Provider: "west", Status: chain.Served},
	}
	if got := zeroLatency(res.Report.Attempts); !reflect.DeepEqual(got, want) {
		t.Errorf("report %+v, want %+v", got, want)
	}
	if len(told) != 1 || told[0].Failed != "a" || told[0].FailedProvider != "east" || told[0].Next != "a" || told[0].NextProvider != "west" {
		t.Errorf("transitions %+v, want a on east → a on west", told)
	}
}

// A deployment the plan marks skipped (the policy forbids it) is reported and never tried.
func TestATargetMarkedSkipIsNeverTried(t *testing.T) {
	p := deployed("a", "east", "west")
	p.Targets[0].Skip = chain.PolicyDenied
	tried := 0
	res, err := chain.Run(context.Background(), chain.Engine{}, p, false, func(ctx context.Context, t chain.Target) (string, error) {
		tried++
		if t.Provider == "east" {
			panic("a skipped deployment was tried")
		}
		return "ok", nil
	})
	want := []chain.Attempt{
		{Model: "a", Provider: "east", Status: chain.Skipped, Reason: chain.PolicyDenied},
		{Model: "a", Provider: "west", Status: chain.Served},
	}
	if err != nil || tried != 1 || !reflect.DeepEqual(zeroLatency(res.Report.Attempts), want) {
		t.Errorf("%v, %d tried, report %+v", err, tried, res.Report.Attempts)
	}
}

// skip_unhealthy counts failures per deployment: a deployment that keeps failing is passed over
// while the other deployment of its model is still tried.
func TestHealthIsPerDeployment(t *testing.T) {
	h := chain.NewHealth(time.Now)
	e := chain.Engine{Health: h}
	p := deployed("a", "east", "west")
	p.SkipUnhealthy = true
	try := byProvider(map[string]behavior{"east": fail(chain.ServerError), "west": serve, "b": serve})
	for range h.Threshold {
		if _, err := chain.Run(context.Background(), e, p, false, try); err != nil {
			t.Fatal(err)
		}
	}
	res, err := chain.Run(context.Background(), e, p, false, try)
	want := []chain.Attempt{
		{Model: "a", Provider: "east", Status: chain.Skipped, Reason: chain.Unhealthy},
		{Model: "a", Provider: "west", Status: chain.Served},
	}
	if err != nil || !reflect.DeepEqual(zeroLatency(res.Report.Attempts), want) {
		t.Errorf("%v, report %+v, want %+v", err, res.Report.Attempts, want)
	}
}

// Models lists each model once, however many deployments it has.
func TestPlanModelsNamesAModelOnce(t *testing.T) {
	if got := deployed("a", "east", "west").Models(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("Models() = %v", got)
	}
}

// A seeded picker spreads first picks in proportion to the weights, repeats itself for the same
// seed, and always returns every deployment once.
func TestPickerSpreadsByWeight(t *testing.T) {
	weights := []int{3, 1, 6}
	const n = 10000
	first := make([]int, len(weights))
	a, b := chain.NewPicker(7), chain.NewPicker(7)
	for range n {
		o := a.Order(weights)
		if !reflect.DeepEqual(o, b.Order(weights)) {
			t.Fatal("two pickers with one seed disagree")
		}
		seen := make([]bool, len(weights))
		for _, i := range o {
			seen[i] = true
		}
		if len(o) != len(weights) || slices.Contains(seen, false) {
			t.Fatalf("order %v is not a permutation", o)
		}
		first[o[0]]++
	}
	for i, w := range weights {
		share, want := float64(first[i])/n, float64(w)/10
		if share < want-0.02 || share > want+0.02 {
			t.Errorf("deployment %d first in %.3f of orders, want %.2f", i, share, want)
		}
	}
	// An unseeded picker (nil) orders too.
	if o := (*chain.Picker)(nil).Order([]int{1, 1}); len(o) != 2 || o[0] == o[1] {
		t.Errorf("nil picker order %v", o)
	}
}

func zeroLatency(as []chain.Attempt) []chain.Attempt {
	out := make([]chain.Attempt, len(as))
	for i, a := range as {
		a.LatencyMS = 0
		out[i] = a
	}
	return out
}
