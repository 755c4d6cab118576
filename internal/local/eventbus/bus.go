// Package eventbus is the local server's event bus: it hands each published event to the same
// consumers the cloud reaches through EventBridge rules and SQS (the webhook dispatcher's fan-out,
// the audit writer), in process. Wrap it in event.NewAsync to get the Publisher.
package eventbus

import (
	"context"
	"errors"
	"fmt"

	"github.com/secureai-gateway/gateway/internal/event"
)

// Consumer takes one event; its error means the event was not handled.
type Consumer func(ctx context.Context, e event.Event) error

// Subscription is a named consumer; the name appears in errors.
type Subscription struct {
	Name    string
	Consume Consumer
}

// Bus delivers every event to every subscription. Its subscriptions are fixed at construction.
type Bus struct {
	subs []Subscription
}

// New returns a bus with subs.
func New(subs ...Subscription) *Bus { return &Bus{subs: subs} }

// Send implements event.Sender: each consumer gets each event, whatever the others did.
func (b *Bus) Send(ctx context.Context, events []event.Event) error {
	var errs []error
	for _, e := range events {
		for _, s := range b.subs {
			if err := s.Consume(ctx, e); err != nil {
				errs = append(errs, fmt.Errorf("eventbus: %s did not take %s %s: %w", s.Name, e.Type, e.ID, err))
			}
		}
	}
	return errors.Join(errs...)
}
