// Package completion runs one chat completion through its failover chain: it prepares the chain
// for a key, sends each attempt to the model's provider, and hands back either the served answer
// or — streaming — a stream already holding its first content token. Both API surfaces use it, so
// there is one attempt loop and one first-token rule.
package completion

import (
	"fmt"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/policy"
)

// Router finds where a model's attempts go.
type Router interface {
	Route(model string) (catalog.Route, error)
}

// Service runs completions.
type Service struct {
	Router   Router
	Engine   chain.Engine
	Settings chain.Settings // project defaults for timeouts
	// Observer is told of every failover and of every request's end; nil: nobody listens.
	Observer Observer
	// Tracer traces each attempt (trace.go); nil: nothing is traced.
	Tracer Tracer
	// Aliases are the catalog's model aliases: a request naming one alone (no models, no
	// fallback_models) runs the alias's chain.
	Aliases map[string]*chain.Defaults
	// Controls govern every call and attempt (limits, policy, billing, tokens, receipts).
	Controls Controls
}

func (s *Service) policies() *policy.Set {
	if s.Controls.Policies != nil {
		return s.Controls.Policies
	}
	return policy.BuiltinSet
}

func notAllowed(model string) error {
	return fault.New(fault.Forbidden, "Access denied", fmt.Sprintf("model %s is not allowed for this API key", model)).
		WithCode("model_not_allowed").WithParam("model")
}

// checkModels checks every model of plan — catalog, provider readiness, the key's allowlist —
// before any attempt, so a chain that could not fully run is refused with nothing spent. It gives
// each target its context window and returns the plan with a target per deployment of each model
// served by several (in catalog order, or drawn by weight), and the route each target's attempts
// go to, in order (a deployment's own for a deployment): resolved here once, so every attempt of
// the call sends where these checks looked. A chain without such a model keeps its targets.
func (s *Service) checkModels(key *apikey.Key, plan chain.Plan) (chain.Plan, []catalog.Route, error) {
	routes := make([]catalog.Route, len(plan.Targets))
	deployed := false
	for i, t := range plan.Targets {
		route, err := s.Router.Route(t.Model)
		if err != nil {
			return plan, nil, err
		}
		if !key.Allows(t.Model) {
			return plan, nil, notAllowed(t.Model)
		}
		plan.Targets[i].ContextWindow = route.Model.ContextWindow
		routes[i] = route
		deployed = deployed || len(route.Deployments) > 0
	}
	if !deployed {
		return plan, routes, nil
	}
	plan, routes = s.deploy(plan, routes)
	return plan, routes, nil
}

// deploy gives each model with deployments one target per deployment whose provider can be
// called, in the order the model's deployments are to be tried, each with its deployment's route.
func (s *Service) deploy(plan chain.Plan, routes []catalog.Route) (chain.Plan, []catalog.Route) {
	targets := make([]chain.Target, 0, 2*len(plan.Targets))
	out := make([]catalog.Route, 0, cap(targets))
	for i, t := range plan.Targets {
		route := routes[i]
		if len(route.Deployments) == 0 {
			targets, out = append(targets, t), append(out, route)
			continue
		}
		order := inOrder(len(route.Deployments))
		if route.Model.Weighted() {
			weights := make([]int, len(route.Deployments))
			for k, d := range route.Deployments {
				weights[k] = route.Model.Weight(d.Model.Provider)
			}
			order = s.Engine.Picker.Order(weights)
		}
		for _, k := range order {
			d := route.Deployments[k]
			t.Provider = d.Model.Provider
			targets, out = append(targets, t), append(out, d)
		}
	}
	plan.Targets = targets
	return plan, out
}

// inOrder is 0…n-1: deployments tried in catalog order.
func inOrder(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
