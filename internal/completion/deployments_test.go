package completion_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/anthropic"
	"github.com/secureai-gateway/gateway/internal/provider/openai"
	pt "github.com/secureai-gateway/gateway/internal/provider/providertest"
	"github.com/secureai-gateway/gateway/internal/receipt"
)

// byUsage admits every call as paid by usage-by-model and keeps nothing: the bill is the
// outcome's.
type byUsage struct{}

func (byUsage) Admit(context.Context, *apikey.Key, []*catalog.Model, billing.Estimate, time.Time) (*billing.Reservation, error) {
	return &billing.Reservation{Mode: apikey.UsageByModel}, nil
}
func (byUsage) Reserve(context.Context, *apikey.Key, []*catalog.Model, billing.Estimate, time.Time) (*billing.Reservation, error) {
	return nil, nil
}
func (byUsage) Settle(context.Context, *billing.Reservation, *billing.Bill, *receipt.Record) error {
	return nil
}
func (byUsage) Prefetch(context.Context, *apikey.Key) {}

type lastOutcome struct{ o completion.Outcome }

func (l *lastOutcome) FailedOver(context.Context, completion.Failover)  {}
func (l *lastOutcome) Finished(_ context.Context, o completion.Outcome) { l.o = o }

// One Claude model served by Anthropic (its own wire) and by an OpenAI-compatible deployment
// with its own price: whichever deployment serves is billed at its price, the model's when it
// has none, and the model is one model of the chain.
func TestADeploymentIsBilledAtItsOwnPrice(t *testing.T) {
	modelPrice, ownPrice := catalog.Pricing{InputPer1M: 3, OutputPer1M: 15}, catalog.Pricing{InputPer1M: 1, OutputPer1M: 2}
	for _, tc := range []struct {
		name      string
		first     pt.Fault
		lines     string
		price     catalog.Pricing
		servedWas string
	}{
		{"the first deployment serves at the model's price", pt.Serve, "anthropic:served", modelPrice, "anthropic"},
		{"the second serves at its own price", pt.Unavailable, "anthropic:failed:server_error compat:served", ownPrice, "compat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claude := pt.New(t, pt.Anthropic.Handler(tc.first, claudeText))
			compat := pt.New(t, pt.OpenAI.Handler(pt.Serve, "Served by the compatible deployment."))
			cat := &catalog.Catalog{
				Providers: map[string]catalog.ProviderConfig{
					"anthropic": {Type: "anthropic", BaseURL: claude.URL, APIKeyEnv: "ANTHROPIC_KEY"},
					"compat":    {Type: "openai", BaseURL: compat.URL + "/v1", APIKeyEnv: "COMPAT_KEY"},
				},
				Models: map[string]*catalog.Model{claudeModel: {Name: claudeModel, Pricing: modelPrice, Deployments: []catalog.Deployment{
					{Provider: "anthropic", Upstream: "claude-fake", Region: "us"},
					{Provider: "compat", Upstream: "claude-compat", Region: "us", Pricing: &ownPrice}}}},
			}
			router, err := catalog.NewRouter(cat, map[string]catalog.Factory{"openai": openai.New, "anthropic": anthropic.New},
				func(string) string { return "test-key" }, provider.NewHTTPClient())
			if err != nil {
				t.Fatal(err)
			}
			obs := &lastOutcome{}
			svc := &completion.Service{Router: router, Settings: chain.ProjectSettings, Observer: obs, Controls: completion.Controls{Ledger: byUsage{}}}
			ctx := identity.WithKey(pt.WithTimeout(t, 20*time.Second), &apikey.Key{})
			call, err := svc.Open(ctx, input(t, []byte(`{"model":"`+claudeModel+`","messages":[{"role":"user","content":"Hi"}]}`), false))
			if err != nil {
				t.Fatal(err)
			}
			if got := call.Plan.Models(); len(got) != 1 {
				t.Errorf("plan models %v: the model counts once", got)
			}
			c, report, err := call.Complete(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var lines string
			for i, a := range report.Attempts {
				if i > 0 {
					lines += " "
				}
				lines += a.Provider + ":" + string(a.Status)
				if a.Reason != "" {
					lines += ":" + string(a.Reason)
				}
				if a.Model != claudeModel {
					t.Errorf("line %d names model %q", i, a.Model)
				}
			}
			if c.Served != claudeModel || lines != tc.lines {
				t.Fatalf("served %q, report %q, want %q", c.Served, lines, tc.lines)
			}
			u := obs.o.Usage
			if u == nil || u.PromptTokens+u.CompletionTokens == 0 || obs.o.Bill == nil {
				t.Fatalf("usage %+v, bill %+v", u, obs.o.Bill)
			}
			usage := billing.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
			want := billing.CostMicros(&catalog.Model{Pricing: tc.price}, usage)
			if obs.o.Bill.Micros != want || obs.o.Bill.Model != claudeModel {
				t.Errorf("billed %d µ$ for %s, want %d (served by %s)", obs.o.Bill.Micros, obs.o.Bill.Model, want, tc.servedWas)
			}
		})
	}
}

// routedAtOpen routes like its router until closed, then refuses: what a catalog that changed
// after Open would do to an attempt that routed afresh.
type routedAtOpen struct {
	*catalog.Router
	closed bool
	calls  int
}

func (r *routedAtOpen) Route(model string) (catalog.Route, error) {
	r.calls++
	if r.closed {
		return catalog.Route{}, errors.New("routed after Open")
	}
	return r.Router.Route(model)
}

// The routes Open resolved and checked are the ones every attempt sends to: a failover to the
// second deployment routes nothing again.
func TestAttemptsUseTheRoutesOpenResolved(t *testing.T) {
	claude := pt.New(t, pt.Anthropic.Handler(pt.Unavailable, claudeText))
	compat := pt.New(t, pt.OpenAI.Handler(pt.Serve, "Served by the compatible deployment."))
	cat := &catalog.Catalog{
		Providers: map[string]catalog.ProviderConfig{
			"anthropic": {Type: "anthropic", BaseURL: claude.URL, APIKeyEnv: "ANTHROPIC_KEY"},
			"compat":    {Type: "openai", BaseURL: compat.URL + "/v1", APIKeyEnv: "COMPAT_KEY"},
		},
		Models: map[string]*catalog.Model{claudeModel: {Name: claudeModel, Deployments: []catalog.Deployment{
			{Provider: "anthropic", Upstream: "claude-fake", Region: "us"},
			{Provider: "compat", Upstream: "claude-compat", Region: "us"}}}},
	}
	inner, err := catalog.NewRouter(cat, map[string]catalog.Factory{"openai": openai.New, "anthropic": anthropic.New},
		func(string) string { return "test-key" }, provider.NewHTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	router := &routedAtOpen{Router: inner}
	svc := &completion.Service{Router: router, Settings: chain.ProjectSettings, Controls: completion.Controls{Ledger: byUsage{}}}
	ctx := identity.WithKey(pt.WithTimeout(t, 20*time.Second), &apikey.Key{})
	call, err := svc.Open(ctx, input(t, []byte(`{"model":"`+claudeModel+`","messages":[{"role":"user","content":"Hi"}]}`), false))
	if err != nil {
		t.Fatal(err)
	}
	router.closed = true
	c, report, err := call.Complete(ctx)
	if err != nil {
		t.Fatalf("an attempt routed again after Open: %v (report %+v)", err, report.Attempts)
	}
	if n := len(report.Attempts); n != 2 || report.Attempts[1].Provider != "compat" || c.Served != claudeModel {
		t.Fatalf("report %+v, served %q: want the failover to the second deployment to serve", report.Attempts, c.Served)
	}
	if router.calls != 1 {
		t.Errorf("the chain's one model was routed %d times, want once (at Open)", router.calls)
	}
}
