package metrics

import (
	"context"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
)

// namespace prefixes every Prometheus name.
const namespace = "secureai"

// latencyBuckets, in seconds, span a cached answer to a slow model's long completion.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Prometheus is the local output: the instruments in their own registry (with the Go runtime's
// and the process's collectors), served by client_golang's handler. Build it with NewPrometheus.
type Prometheus struct {
	reg *prometheus.Registry
	// Provider names a model's provider for the attempts' provider label (ProviderOf by default).
	provider func(string) string

	requests, failovers, attempts, tokens, cost, refusals, retries, resumed, breakers, webhooks, unpublished *cache[prometheus.Counter]
	attemptTime, firstToken                                                                                  *cache[prometheus.Observer]
}

// NewPrometheus registers the instruments. provider names a model's provider (nil: ProviderOf).
func NewPrometheus(provider func(model string) string) *Prometheus {
	if provider == nil {
		provider = ProviderOf
	}
	p := &Prometheus{reg: prometheus.NewRegistry(), provider: provider}
	p.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	counter := func(in *Instrument) *cache[prometheus.Counter] {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: in.Name, Help: in.Help}, in.Labels)
		p.reg.MustRegister(v)
		return newCache(len(in.Labels), func(lvs ...string) prometheus.Counter { return v.WithLabelValues(lvs...) })
	}
	histogram := func(in *Instrument) *cache[prometheus.Observer] {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: in.Name, Help: in.Help, Buckets: latencyBuckets}, in.Labels)
		p.reg.MustRegister(v)
		return newCache(len(in.Labels), func(lvs ...string) prometheus.Observer { return v.WithLabelValues(lvs...) })
	}
	p.requests, p.failovers, p.attempts = counter(&Requests), counter(&Failovers), counter(&Attempts)
	p.attemptTime, p.firstToken = histogram(&AttemptTime), histogram(&FirstToken)
	p.tokens, p.cost, p.refusals = counter(&Tokens), counter(&Cost), counter(&Refusals)
	p.retries, p.resumed, p.breakers = counter(&Retries), counter(&Resumed), counter(&BreakerOpens)
	p.webhooks, p.unpublished = counter(&Webhooks), counter(&Unpublished)
	return p
}

// Handler serves the registry in the Prometheus text format (or OpenMetrics when asked).
func (p *Prometheus) Handler() http.Handler {
	return promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{Registry: p.reg})
}

// Registry is the registry the instruments are in.
func (p *Prometheus) Registry() *prometheus.Registry { return p.reg }

// FailedOver implements completion.Observer: failovers are counted from the request's report
// when it ends (Summarize), so a failover and its request are counted together.
func (p *Prometheus) FailedOver(context.Context, completion.Failover) {}

// Finished implements completion.Observer.
func (p *Prometheus) Finished(_ context.Context, o completion.Outcome) {
	var r Request
	Summarize(&o, &r)
	p.Add(&r)
}

// Add counts one request.
func (p *Prometheus) Add(r *Request) {
	p.requests.get(r.Surface, r.Outcome, "").Inc()
	if r.Refusal != "" {
		p.refusals.get(r.Refusal, "", "").Inc()
	}
	for i := range r.Lines {
		a := &r.Lines[i]
		prov := a.Provider // a deployment's provider; else the model's
		if prov == "" {
			prov = p.provider(a.Model)
		}
		p.attempts.get(a.Model, prov, string(a.Status)).Inc()
		if a.Retry > 0 {
			p.retries.get(a.Model, "", "").Inc()
		}
		switch a.Status {
		case chain.Served:
			p.attemptTime.get(a.Model, "", "").Observe(float64(a.LatencyMS) / 1e3)
			if r.Stream {
				// A streamed attempt is served once its first content token arrived (chain.Try).
				p.firstToken.get(a.Model, "", "").Observe(float64(a.LatencyMS) / 1e3)
			}
		case chain.Failed:
			p.attemptTime.get(a.Model, "", "").Observe(float64(a.LatencyMS) / 1e3)
		}
	}
	r.Transitions(func(t chain.Transition) bool {
		p.failovers.get(t.Failed, t.Next, string(t.Reason)).Inc()
		return true
	})
	for i, model := range [2]string{r.Served, r.Resumed} {
		if model == "" {
			continue
		}
		if i == 1 {
			p.resumed.get(model, "", "").Inc()
		}
		if r.In[i] > 0 {
			p.tokens.get(model, "input", "").Add(float64(r.In[i]))
		}
		if r.Out[i] > 0 {
			p.tokens.get(model, "output", "").Add(float64(r.Out[i]))
		}
		if r.Billed[i] {
			p.cost.get(model, "", "").Add(float64(r.Micros[i]))
		}
	}
}

// BreakerOpened implements Recorder.
func (p *Prometheus) BreakerOpened(scope, cause string) { p.breakers.get(scope, cause, "").Inc() }

// WebhookDelivery implements Recorder.
func (p *Prometheus) WebhookDelivery(outcome string) { p.webhooks.get(outcome, "", "").Inc() }

// EventsUnpublished implements Recorder.
func (p *Prometheus) EventsUnpublished(fate string, n int) {
	p.unpublished.get(fate, "", "").Add(float64(n))
}

// cache keeps each label combination's child, so a request's counting looks it up in a map keyed
// by value (no allocation) instead of going through the vector's variadic lookup each time.
type cache[M any] struct {
	n    int // how many labels
	make func(lvs ...string) M
	mu   sync.RWMutex
	m    map[[3]string]M
}

func newCache[M any](n int, make func(lvs ...string) M) *cache[M] {
	return &cache[M]{n: n, make: make, m: map[[3]string]M{}}
}

// get returns the child for the first n of three label values (the others are "").
func (c *cache[M]) get(a, b, d string) M {
	k := [3]string{a, b, d}
	c.mu.RLock()
	m, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return m
	}
	return c.add(a, b, d)
}

// add makes the child on a label combination's first use (the key stays off the heap in get).
func (c *cache[M]) add(a, b, d string) M {
	k := [3]string{a, b, d}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.m[k]; ok {
		return m
	}
	m := c.make([]string{a, b, d}[:c.n]...)
	c.m[k] = m
	return m
}
