// Package completion runs one chat completion through its failover chain: it prepares the chain
// for a key, sends each attempt to the model's provider, and hands back either the served answer
// or — streaming — a stream already holding its first content token. Both API surfaces use it, so
// there is one attempt loop and one first-token rule.
package completion

import (
	"context"
	"fmt"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/policy"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/tidwall/gjson"
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
// before any attempt, so a chain that could not fully run is refused with nothing spent. It
// returns the models' catalog entries, in order, and gives each target its context window.
func (s *Service) checkModels(key *apikey.Key, plan chain.Plan) ([]*catalog.Model, error) {
	models := make([]*catalog.Model, len(plan.Targets))
	for i, t := range plan.Targets {
		route, err := s.Router.Route(t.Model)
		if err != nil {
			return nil, err
		}
		if !key.Allows(t.Model) {
			return nil, notAllowed(t.Model)
		}
		plan.Targets[i].ContextWindow = route.Model.ContextWindow
		models[i] = route.Model
	}
	return models, nil
}

// Completion is a served non-streamed answer.
type Completion struct {
	Response *provider.Response
	Served   string
}

// Complete runs the call's chain for a whole answer. A failure carries the attempts made.
func (c *Call) Complete(ctx context.Context) (*Completion, chain.Report, error) {
	if err := c.admit(ctx); err != nil {
		c.finish(ctx, Outcome{Err: err})
		return nil, chain.Report{}, err
	}
	res, err := chain.Run(ctx, c.engine(), c.Plan, false, func(ctx context.Context, t chain.Target) (*provider.Response, error) {
		route, req, err := c.request(ctx, t, false)
		if err != nil {
			return nil, err
		}
		return route.Provider.Complete(ctx, req)
	})
	if err != nil {
		c.finish(ctx, Outcome{Report: res.Report, Err: err})
		return nil, res.Report, err
	}
	res.Release()
	c.served(res.Served)
	if tr := c.trace; tr != nil {
		tr.responseModel, tr.output = gjson.GetBytes(res.Value.Body, "model").String(), res.Value.Body
	}
	c.finish(ctx, Outcome{Served: res.Served, Usage: &res.Value.Usage, Report: res.Report})
	return &Completion{Response: res.Value, Served: res.Served}, res.Report, nil
}

// served marks the last attempt sent to model as the one that served: with retries a model is
// sent more than once, with a hedge another model's attempt may have started after it.
func (c *Call) served(model string) {
	for i := len(c.attempts) - 1; i >= 0; i-- {
		if c.attempts[i].model == model {
			c.servedAttempt = i
			return
		}
	}
}

// request builds attempt t's provider request, governed (controls.go).
func (c *Call) request(ctx context.Context, t chain.Target, stream bool) (catalog.Route, *provider.Request, error) {
	route, req, err := c.svc.request(t, c.Input.Body, stream)
	if err != nil {
		return route, nil, err
	}
	if req.OnSend, err = c.govern(ctx, t, route); err != nil {
		return route, nil, err
	}
	return route, req, nil
}

func (s *Service) request(t chain.Target, body []byte, stream bool) (catalog.Route, *provider.Request, error) {
	route, err := s.Router.Route(t.Model)
	if err != nil {
		return route, nil, err
	}
	req := &provider.Request{Body: body, Model: route.Model.Upstream, Stream: stream}
	if len(route.Model.Regions) > 0 {
		req.Region = route.Model.Regions[0]
	}
	return route, req, nil
}
