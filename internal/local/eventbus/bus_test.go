package eventbus_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/local/eventbus"
)

func TestEveryConsumerGetsEveryEventEvenWhenAnotherFails(t *testing.T) {
	var mu sync.Mutex
	var got []string
	record := func(name string) eventbus.Consumer {
		return func(_ context.Context, e event.Event) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, name+":"+string(e.Type))
			return nil
		}
	}
	boom := errors.New("boom")
	bus := eventbus.New(
		eventbus.Subscription{Name: "failing", Consume: func(context.Context, event.Event) error { return boom }},
		eventbus.Subscription{Name: "webhooks", Consume: record("webhooks")},
		eventbus.Subscription{Name: "audit", Consume: record("audit")},
	)
	p := event.NewAsync(bus, slog.New(slog.NewTextHandler(io.Discard, nil)))
	now := time.Now()
	p.Publish(context.Background(), event.WebhookTestEvent("wh", event.Subject{}, now), event.ModelFailoverEvent(event.Failover{}, now))
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"webhooks:webhook:test", "audit:webhook:test", "webhooks:api:model_failover", "audit:api:model_failover"}
	if len(got) != len(want) {
		t.Fatalf("consumers got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("consumers got %v, want %v", got, want)
		}
	}
	if st := p.Stats(); st.Failed != 2 {
		t.Errorf("a consumer's failure is not counted: %+v", st)
	}
	if err := bus.Send(context.Background(), []event.Event{event.WebhookTestEvent("wh", event.Subject{}, now)}); !errors.Is(err, boom) {
		t.Errorf("Send = %v, want the consumer's error", err)
	}
}
