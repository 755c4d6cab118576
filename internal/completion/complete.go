package completion

import (
	"context"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/tidwall/gjson"
)

// Completion is a served non-streamed answer.
type Completion struct {
	Response *provider.Response
	Served   string
}

// Complete runs the call's chain for a whole answer. A failure carries the attempts made.
func (c *Call) Complete(ctx context.Context) (*Completion, chain.Report, error) {
	if err := c.runSteps(ctx, true); err != nil {
		c.finish(ctx, Outcome{Err: err})
		return nil, chain.Report{}, err
	}
	res, err := chain.Run(ctx, c.engine(), c.Plan, false, func(ctx context.Context, t chain.Target) (*provider.Response, error) {
		route, req, err := c.request(ctx, t)
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
	c.served(res.Report)
	if tr := c.trace; tr != nil {
		tr.responseModel, tr.output = gjson.GetBytes(res.Value.Body, "model").String(), res.Value.Body
	}
	c.finish(ctx, Outcome{Served: res.Served, Usage: &res.Value.Usage, Report: res.Report})
	return &Completion{Response: res.Value, Served: res.Served}, res.Report, nil
}

// served marks the last attempt sent to the report's served model (and deployment) as the one
// that served: with retries a model is sent more than once, with a hedge another model's attempt
// may have started after it.
func (c *Call) served(rep chain.Report) {
	line := lineWith(rep, chain.Served)
	for i := len(c.attempts) - 1; i >= 0; i-- {
		if a := c.attempts[i]; a.model == line.Model && a.provider == line.Provider {
			c.servedAttempt = i
			return
		}
	}
}

// lineWith is the report's last line with status s (Served, Resumed: at most one each).
func lineWith(rep chain.Report, s chain.Status) chain.Attempt {
	for i := len(rep.Attempts) - 1; i >= 0; i-- {
		if rep.Attempts[i].Status == s {
			return rep.Attempts[i]
		}
	}
	return chain.Attempt{}
}

// request builds attempt t's provider request, governed (controls.go).
func (c *Call) request(ctx context.Context, t chain.Target) (catalog.Route, *provider.Request, error) {
	route := c.routeOf(t)
	req := newRequest(route, c.Input.Body)
	req.Native = c.Input.Native
	var err error
	if req.OnSend, err = c.govern(ctx, t, route); err != nil {
		return route, nil, err
	}
	return route, req, nil
}

func newRequest(route catalog.Route, body []byte) *provider.Request {
	req := &provider.Request{Body: body, Model: route.Model.Upstream}
	if len(route.Model.Regions) > 0 {
		req.Region = route.Model.Regions[0]
	}
	return req
}
