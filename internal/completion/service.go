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
	"github.com/secureai-gateway/gateway/internal/provider"
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
}

// AccessError is a chain naming a model the key may not use.
type AccessError struct{ Model string }

func (e *AccessError) Error() string {
	return fmt.Sprintf("model %s is not allowed for this API key", e.Model)
}

// Prepare resolves the chain a request names for key and checks every model of it — catalog,
// provider readiness, the key's allowlist — before any attempt, so a chain that could not fully
// run is refused with nothing spent.
func (s *Service) Prepare(key *apikey.Key, spec chain.Spec) (chain.Plan, error) {
	plan, err := chain.Resolve(spec, key.FailoverDefaults, s.Settings)
	if err != nil {
		return plan, err
	}
	for _, t := range plan.Targets {
		if _, err := s.Router.Route(t.Model); err != nil {
			return plan, err
		}
		if !key.Allows(t.Model) {
			return plan, &AccessError{Model: t.Model}
		}
	}
	return plan, nil
}

// Completion is a served non-streamed answer.
type Completion struct {
	Response *provider.Response
	Served   string
}

// Complete runs plan for the OpenAI-shaped body. The report lists the attempts made, also on error.
func (s *Service) Complete(ctx context.Context, plan chain.Plan, body []byte) (*Completion, chain.Report, error) {
	res, err := chain.Run(ctx, s.Engine, plan, false, func(ctx context.Context, t chain.Target) (*provider.Response, error) {
		route, req, err := s.request(t, body, false)
		if err != nil {
			return nil, err
		}
		return route.Provider.Complete(ctx, req)
	})
	if err != nil {
		return nil, res.Report, err
	}
	res.Release()
	return &Completion{Response: res.Value, Served: res.Served}, res.Report, nil
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
