package event_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
)

var now = time.Date(2026, 12, 1, 2, 3, 4, 0, time.UTC)

func TestEnvelopeHasIDTypeVersionCreatedData(t *testing.T) {
	e := event.ModelFailoverEvent(event.Failover{FailedModel: "openai/a", Reason: "timeout", NextModel: "anthropic/b",
		LatencyMs: 1200, Subject: event.Subject{UserID: "u1", APIKeyID: "k1", RequestID: "r1"}, Time: now}, now)
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^evt_[0-9a-f]{32}$`).MatchString(got["id"].(string)) {
		t.Errorf("id = %v, want evt_ and 32 hex digits", got["id"])
	}
	if got["type"] != "api:model_failover" || got["version"] != event.Version || got["created"] != "2026-12-01T02:03:04Z" {
		t.Errorf("envelope = %s", raw)
	}
	data := got["data"].(map[string]any)
	for k, want := range map[string]any{"failedModel": "openai/a", "reason": "timeout", "nextModel": "anthropic/b",
		"latencyMs": 1200.0, "userId": "u1", "apiKeyId": "k1", "requestId": "r1", "time": "2026-12-01T02:03:04Z"} {
		if data[k] != want {
			t.Errorf("data.%s = %v, want %v", k, data[k], want)
		}
	}
	if err := e.Validate(); err != nil {
		t.Errorf("Validate of an emitted event: %v", err)
	}
}

func TestAdminEventRefusesNonAdminTypes(t *testing.T) {
	for _, typ := range []event.Type{event.ModelFailover, "admin:unknown"} {
		_, err := event.AdminEvent(typ, event.Admin{Action: "create"}, nil, map[string]string{"id": "x"}, now)
		if fault.KindOf(err) != fault.InvalidRequest {
			t.Errorf("AdminEvent(%s) err = %v, want an invalid-request fault", typ, err)
		}
	}
	e, err := event.AdminEvent(event.AdminWebhookCreated, event.Admin{Action: "create", Target: event.Target{Kind: "webhook", ID: "wh_1"}},
		nil, map[string]string{"url": "https://x"}, now)
	if err != nil || e.Validate() != nil {
		t.Fatalf("AdminEvent: %v", err)
	}
}

func TestValidateNamesTheBadField(t *testing.T) {
	good := event.WebhookTestEvent("wh_1", event.Subject{}, now)
	cases := map[string]func(*event.Event){
		"id":      func(e *event.Event) { e.ID = "x" },
		"type":    func(e *event.Event) { e.Type = "api:nope" },
		"created": func(e *event.Event) { e.Created = time.Time{} },
		"data":    func(e *event.Event) { e.Data = json.RawMessage(`[]`) },
	}
	for param, breakIt := range cases {
		e := good
		breakIt(&e)
		var f *fault.Error
		if err := e.Validate(); !errors.As(err, &f) || f.Param != param {
			t.Errorf("broken %s: Validate = %v, want a fault naming %q", param, err, param)
		}
	}
}

// slowSender holds each send until release is closed.
type slowSender struct {
	release chan struct{}
	mu      sync.Mutex
	got     []event.Event
}

func (s *slowSender) Send(ctx context.Context, evs []event.Event) error {
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, evs...)
	return nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// An event published by a handler right before it returns is delivered once the invocation flushes,
// even though the request's context is cancelled when the handler returns.
func TestEventPublishedJustBeforeReturnIsNotLostAfterFlush(t *testing.T) {
	s := &slowSender{release: make(chan struct{})}
	p := event.NewAsync(s, quiet())
	handler := func(ctx context.Context) {
		p.Publish(ctx, event.ModelFailoverEvent(event.Failover{FailedModel: "a", NextModel: "b", Time: now}, now))
	}
	reqCtx, cancel := context.WithCancel(context.Background())
	handler(reqCtx)
	cancel() // the request is over
	time.AfterFunc(20*time.Millisecond, func() { close(s.release) })
	if err := event.FlushBounded(reqCtx, p); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) != 1 || s.got[0].Type != event.ModelFailover {
		t.Fatalf("delivered %v, want the failover event", s.got)
	}
	if st := p.Stats(); st.Published != 1 || st.Failed != 0 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestFlushIsBoundedByItsContext(t *testing.T) {
	s := &slowSender{release: make(chan struct{})}
	defer close(s.release)
	p := event.NewAsync(s, quiet())
	p.Publish(context.Background(), event.WebhookTestEvent("wh", event.Subject{}, now))
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer stop()
	if err := p.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush = %v, want the deadline", err)
	}
	if p.Stats().AbandonedFlushes != 1 {
		t.Errorf("abandoned flush not counted")
	}
}

type failing struct{}

func (failing) Send(context.Context, []event.Event) error { return errors.New("bus down") }

func TestPublishFailureIsCountedNotReturned(t *testing.T) {
	p := event.NewAsync(failing{}, quiet())
	p.Publish(context.Background(), event.WebhookTestEvent("wh", event.Subject{}, now), event.WebhookTestEvent("wh", event.Subject{}, now))
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Failed != 2 || st.Published != 0 {
		t.Errorf("Stats = %+v, want 2 failed", st)
	}
}
