// Package localevents assembles the event pipeline of the local server (`make run`): the
// in-process bus carries each published event to the webhook dispatcher and the audit writer, as
// the cloud's EventBridge rules do, and pending deliveries wait in the embedded store, so a
// restart resumes them.
package localevents

import (
	"context"
	"log/slog"
	"time"

	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/local/eventbus"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// pollEvery is how often the local worker looks for due deliveries.
const pollEvery = 500 * time.Millisecond

// Pipeline is the local event pipeline.
type Pipeline struct {
	Publisher  *event.Async
	Dispatcher *webhook.Dispatcher
	Worker     *webhook.Worker
	Guard      *webhook.Guard
	Audit      audit.Store
}

// New builds the pipeline over the embedded store.
func New(store *boltstore.Store, reach webhook.Reach, log *slog.Logger) *Pipeline {
	guard := webhook.NewGuard(reach)
	queue := webhook.LocalQueue{Pending: store.Pending(), Now: time.Now}
	d := &webhook.Dispatcher{Store: store, Queue: queue, Log: log,
		Poster: &webhook.Poster{Client: guard.Client(), Now: time.Now}}
	auditLog := store.AuditLog()
	writer := &audit.Writer{Store: auditLog}
	bus := eventbus.New(
		eventbus.Subscription{Name: "webhooks", Consume: d.FanOut},
		eventbus.Subscription{Name: "audit", Consume: writer.Write},
	)
	pub := event.NewAsync(bus, log)
	d.Events = pub // an endpoint the worker disables is an event like any other
	return &Pipeline{
		Publisher:  pub,
		Dispatcher: d,
		Worker:     &webhook.Worker{Pending: store.Pending(), Dispatcher: d, Now: time.Now, Poll: pollEvery},
		Guard:      guard,
		Audit:      auditLog,
	}
}

// Run delivers queued webhooks until ctx ends; the server runs it on its own goroutine.
func (p *Pipeline) Run(ctx context.Context) { p.Worker.Run(ctx) }
