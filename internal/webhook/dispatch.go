package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/event"
)

// Backoff is when each attempt of a delivery runs, after the previous one failed: at once, then
// 10 s and 60 s later. Its length is the number of attempts.
var Backoff = [...]time.Duration{0, 10 * time.Second, 60 * time.Second}

// Queue holds a delivery until its attempt is due. Retries wait here (an SQS message with
// DelaySeconds, a row of the embedded store), never in a sleeping process.
type Queue interface {
	Enqueue(ctx context.Context, d Delivery, delay time.Duration) error
}

// Dispatcher turns events into deliveries and runs their attempts.
type Dispatcher struct {
	Store  Store
	Queue  Queue
	Poster *Poster
	Log    *slog.Logger
	// Observe, when set, is told how each delivery attempt Deliver runs ended: "delivered",
	// "retrying" (another attempt is queued) or "failed" (it was the last). For metrics.
	Observe func(outcome string)
	// Events, when set, receives webhook:endpoint_disabled when the dispatcher disables an
	// endpoint itself, so subscribers and the audit log learn it, not only the process log.
	Events event.Publisher
}

func (d *Dispatcher) observe(outcome string) {
	if d.Observe != nil {
		d.Observe(outcome)
	}
}

// FanOut queues one delivery of ev per enabled endpoint subscribed to it. Running it twice for
// one event queues the same deliveries (same ids) again, which at-least-once allows.
func (d *Dispatcher) FanOut(ctx context.Context, ev event.Event) error {
	eps, err := d.Store.Endpoints(ctx)
	if err != nil {
		return fmt.Errorf("webhook: listing endpoints: %w", err)
	}
	var errs []error
	for i := range eps {
		ep := &eps[i]
		if !ep.Wants(ev.Type) {
			continue
		}
		dl := Delivery{ID: DeliveryID(ev.ID, ep.ID), EndpointID: ep.ID, Attempt: 1, Event: ev}
		if err := d.Queue.Enqueue(ctx, dl, Backoff[0]); err != nil {
			errs = append(errs, fmt.Errorf("webhook: queueing %s to %s: %w", ev.ID, ep.ID, err))
		}
	}
	return errors.Join(errs...)
}

// Deliver runs the attempt dl is for, records it, and queues the next attempt after a failure
// (or counts the delivery as failed after the last). It returns an error only when that
// bookkeeping failed, so the caller's queue offers dl again; a receiver's failure is not one.
func (d *Dispatcher) Deliver(ctx context.Context, dl Delivery) error {
	ep, err := d.Store.Endpoint(ctx, dl.EndpointID)
	if errors.Is(err, ErrNotFound) {
		return nil // deleted since: nothing to deliver to
	}
	if err != nil {
		return fmt.Errorf("webhook: reading endpoint %s: %w", dl.EndpointID, err)
	}
	if !ep.Enabled {
		return nil
	}
	a := d.Poster.Post(ctx, ep, dl)
	// The receiver asking for no more deliveries (a 410, as Stripe and Svix read it) gets none.
	retry := !a.Succeeded() && a.StatusCode != http.StatusGone && dl.Attempt < len(Backoff)
	if retry { // the record says when, so an operator need not know the schedule
		a.NextAttemptAt = d.Poster.Now().UTC().Add(Backoff[dl.Attempt])
	}
	if err := d.Store.RecordAttempt(ctx, a); err != nil {
		d.Log.ErrorContext(ctx, "webhook attempt not recorded", "endpoint", ep.ID, "delivery", dl.ID, "err", err)
	}
	switch {
	case a.Succeeded():
		d.observe("delivered")
		if ep.ConsecutiveFailures > 0 {
			return d.settle(ctx, ep.ID, outcomeDelivered)
		}
		return nil
	case a.StatusCode == http.StatusGone:
		d.observe("failed")
		return d.settle(ctx, ep.ID, outcomeGone)
	case retry:
		d.observe("retrying")
		next := dl
		next.Attempt++
		if err := d.Queue.Enqueue(ctx, next, Backoff[dl.Attempt]); err != nil {
			return fmt.Errorf("webhook: queueing attempt %d of %s: %w", next.Attempt, dl.ID, err)
		}
		return nil
	default:
		d.observe("failed")
		d.Log.WarnContext(ctx, "webhook delivery failed", "endpoint", ep.ID, "delivery", dl.ID, "event", dl.Event.ID, "err", a.Error)
		return d.settle(ctx, ep.ID, outcomeFailed)
	}
}

// How a delivery ended, for settle.
type outcome uint8

const (
	outcomeDelivered outcome = iota
	outcomeFailed
	outcomeGone
)

// settle records a finished delivery: a success resets the failure count; the DisableAfter-th
// consecutive failure, or a 410 Gone, disables the endpoint and says why in its record.
func (d *Dispatcher) settle(ctx context.Context, id string, o outcome) error {
	disabled := false // by this update's last run: fn may run again after a conflict
	ep, err := d.Store.UpdateEndpoint(ctx, id, func(e *Endpoint) error {
		disabled = false
		if o == outcomeDelivered {
			e.ConsecutiveFailures = 0
			return nil
		}
		e.ConsecutiveFailures++
		reason := ""
		switch {
		case o == outcomeGone:
			reason = DisabledGone
		case e.ConsecutiveFailures >= DisableAfter:
			reason = DisabledFailures
		}
		if reason != "" && e.Enabled {
			e.Enabled, e.DisabledReason, e.DisabledAt = false, reason, time.Now().UTC()
			disabled = true
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil || !disabled {
		return err
	}
	d.Log.WarnContext(ctx, "webhook endpoint disabled", "endpoint", id, "reason", ep.DisabledReason, "failures", ep.ConsecutiveFailures)
	if d.Events != nil {
		a := ep.Audited()
		d.Events.Publish(ctx, event.EndpointDisabledEvent(event.EndpointDisabled{EndpointID: ep.ID, URL: a.URL,
			URLFingerprint: a.URLFingerprint, Reason: ep.DisabledReason, ConsecutiveFailures: ep.ConsecutiveFailures,
			Time: ep.DisabledAt}, ep.DisabledAt))
	}
	return nil
}

// Test sends a webhook:test event to endpoint id once, now, whether or not the endpoint is
// subscribed to it or enabled, and records the attempt.
func (d *Dispatcher) Test(ctx context.Context, id string, by event.Subject, now time.Time) (Attempt, error) {
	ep, err := d.Store.Endpoint(ctx, id)
	if err != nil {
		return Attempt{}, err
	}
	ev := event.WebhookTestEvent(ep.ID, by, now)
	a := d.Poster.Post(ctx, ep, Delivery{ID: DeliveryID(ev.ID, ep.ID), EndpointID: ep.ID, Attempt: 1, Event: ev})
	if err := d.Store.RecordAttempt(ctx, a); err != nil {
		return a, fmt.Errorf("webhook: recording the test attempt: %w", err)
	}
	return a, nil
}
