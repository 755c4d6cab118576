package metrics

import (
	"context"
	"slices"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/completion"
)

// other is the model label of a model outside the catalog whose provider is not configured
// either; a chain never reaches one (the router refuses it), so it only keeps the bound whole.
const other = "other"

// Catalogued tells rec every completion with its models named as metrics count them: a catalog
// model by its name, any other — a name a provider with any_model admitted, which the caller
// chose — as "<provider>/other". The caller thus cannot add series to the Prometheus registry, nor
// custom metrics to CloudWatch (one per EMF dimension value). gateway.Deps.Attach puts every
// deployment's recorder behind it.
func Catalogued(rec Recorder, cat *catalog.Catalog) Recorder {
	others := make(map[string]string, len(cat.Providers))
	for p := range cat.Providers {
		others[p] = p + "/" + other
	}
	return catalogued{Recorder: rec, models: cat.Models, others: others}
}

type catalogued struct {
	Recorder
	models map[string]*catalog.Model
	others map[string]string // provider → "<provider>/other", made once
}

// name is model as metrics count it.
func (c catalogued) name(model string) string {
	if _, ok := c.models[model]; ok || model == "" {
		return model
	}
	if label, ok := c.others[ProviderOf(model)]; ok {
		return label
	}
	return other
}

// FailedOver implements completion.Observer.
func (c catalogued) FailedOver(ctx context.Context, f completion.Failover) {
	f.Failed, f.Next = c.name(f.Failed), c.name(f.Next)
	c.Recorder.FailedOver(ctx, f)
}

// Finished implements completion.Observer. o's report lines are shared with the other observers
// (and are the caller's failover report), so lines are renamed in a copy, made only when one
// names a model outside the catalog.
func (c catalogued) Finished(ctx context.Context, o completion.Outcome) {
	o.Served, o.Resumed = c.name(o.Served), c.name(o.Resumed)
	for i, a := range o.Report.Attempts {
		if c.name(a.Model) == a.Model {
			continue
		}
		lines := slices.Clone(o.Report.Attempts)
		for j := i; j < len(lines); j++ {
			lines[j].Model = c.name(lines[j].Model)
		}
		o.Report.Attempts = lines
		break
	}
	c.Recorder.Finished(ctx, o)
}
