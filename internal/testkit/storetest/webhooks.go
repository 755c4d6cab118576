package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// RunWebhooks checks the webhook.Store contract.
func RunWebhooks(t *testing.T, newStore func(t *testing.T) webhook.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	endpoint := func(id string, at time.Time) *webhook.Endpoint {
		return &webhook.Endpoint{ID: id, URL: "https://example.com/" + id, Events: []string{"*"}, Enabled: true,
			Secret: "whsec_c2VjcmV0", CreatedAt: at, UpdatedAt: at}
	}

	t.Run("created endpoint reads back with its secret", func(t *testing.T) {
		s := newStore(t)
		want := endpoint("wh_a", t0)
		if err := s.CreateEndpoint(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, err := s.Endpoint(ctx, "wh_a")
		if err != nil {
			t.Fatal(err)
		}
		if got.URL != want.URL || got.Secret != want.Secret || !got.Enabled || !got.CreatedAt.Equal(t0) || len(got.Events) != 1 {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})

	t.Run("unknown endpoint is ErrNotFound for read, update and delete", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.Endpoint(ctx, "wh_none"); !errors.Is(err, webhook.ErrNotFound) {
			t.Errorf("Endpoint: %v", err)
		}
		if _, err := s.UpdateEndpoint(ctx, "wh_none", func(*webhook.Endpoint) error { return nil }); !errors.Is(err, webhook.ErrNotFound) {
			t.Errorf("UpdateEndpoint: %v", err)
		}
		if err := s.DeleteEndpoint(ctx, "wh_none"); !errors.Is(err, webhook.ErrNotFound) {
			t.Errorf("DeleteEndpoint: %v", err)
		}
	})

	t.Run("endpoints list oldest first", func(t *testing.T) {
		s := newStore(t)
		for i, id := range []string{"wh_c", "wh_a", "wh_b"} {
			if err := s.CreateEndpoint(ctx, endpoint(id, t0.Add(time.Duration(i)*time.Minute))); err != nil {
				t.Fatal(err)
			}
		}
		eps, err := s.Endpoints(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range eps {
			ids = append(ids, e.ID)
		}
		if fmt.Sprint(ids) != "[wh_c wh_a wh_b]" {
			t.Errorf("ids = %v", ids)
		}
	})

	t.Run("update applies and an update error leaves the record unchanged", func(t *testing.T) {
		s := newStore(t)
		if err := s.CreateEndpoint(ctx, endpoint("wh_a", t0)); err != nil {
			t.Fatal(err)
		}
		got, err := s.UpdateEndpoint(ctx, "wh_a", func(e *webhook.Endpoint) error { e.Description = "changed"; return nil })
		if err != nil || got.Description != "changed" {
			t.Fatalf("UpdateEndpoint = %+v, %v", got, err)
		}
		boom := errors.New("boom")
		if _, err := s.UpdateEndpoint(ctx, "wh_a", func(e *webhook.Endpoint) error { e.Description = "lost"; return boom }); !errors.Is(err, boom) {
			t.Fatalf("UpdateEndpoint err = %v, want fn's", err)
		}
		if got, _ := s.Endpoint(ctx, "wh_a"); got.Description != "changed" {
			t.Errorf("description = %q after a failed update", got.Description)
		}
	})

	t.Run("concurrent failure counts are all kept", func(t *testing.T) {
		s := newStore(t)
		if err := s.CreateEndpoint(ctx, endpoint("wh_a", t0)); err != nil {
			t.Fatal(err)
		}
		const n = 10
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				if _, err := s.UpdateEndpoint(ctx, "wh_a", func(e *webhook.Endpoint) error { e.ConsecutiveFailures++; return nil }); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if got, _ := s.Endpoint(ctx, "wh_a"); got.ConsecutiveFailures != n {
			t.Errorf("failures = %d, want %d", got.ConsecutiveFailures, n)
		}
	})

	t.Run("attempts list newest first, bounded, and go with their endpoint", func(t *testing.T) {
		s := newStore(t)
		for _, id := range []string{"wh_a", "wh_b"} {
			if err := s.CreateEndpoint(ctx, endpoint(id, t0)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 5 {
			a := webhook.Attempt{EndpointID: "wh_a", DeliveryID: fmt.Sprintf("d%d", i), EventID: "evt_1", EventType: event.WebhookTest,
				Attempt: 1, Status: webhook.StatusFailed, StatusCode: 500, LatencyMs: 12, Error: "receiver answered 500", At: t0.Add(time.Duration(i) * time.Second),
				NextAttemptAt: t0.Add(time.Duration(i)*time.Second + 10*time.Second)}
			if err := s.RecordAttempt(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.RecordAttempt(ctx, webhook.Attempt{EndpointID: "wh_b", DeliveryID: "x", Attempt: 1, Status: webhook.StatusSucceeded, At: t0}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Attempts(ctx, "wh_a", 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].DeliveryID != "d4" || got[2].DeliveryID != "d2" || got[0].StatusCode != 500 || got[0].Error == "" ||
			!got[0].NextAttemptAt.Equal(t0.Add(14*time.Second)) {
			t.Fatalf("attempts = %+v", got)
		}
		if err := s.DeleteEndpoint(ctx, "wh_a"); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Attempts(ctx, "wh_a", 10); len(got) != 0 {
			t.Errorf("attempts of a deleted endpoint = %d", len(got))
		}
		if got, _ := s.Attempts(ctx, "wh_b", 10); len(got) != 1 {
			t.Errorf("another endpoint's attempts = %d, want 1", len(got))
		}
	})
}
