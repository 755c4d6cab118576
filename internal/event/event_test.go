package event_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
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
	flushCtx, stop := context.WithTimeout(context.WithoutCancel(reqCtx), event.FlushTimeout)
	defer stop()
	if err := p.Flush(flushCtx); err != nil {
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
	var told []string
	p.Unpublished = func(fate string, n int) { told = append(told, fmt.Sprint(fate, n)) }
	p.Publish(context.Background(), event.WebhookTestEvent("wh", event.Subject{}, now), event.WebhookTestEvent("wh", event.Subject{}, now))
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Failed != 2 || st.Published != 0 {
		t.Errorf("Stats = %+v, want 2 failed", st)
	}
	if !slices.Equal(told, []string{"lost2"}) {
		t.Errorf("Unpublished told %v, want 2 lost", told)
	}
}

// outbox records what reaches it, or fails when err is set.
type outbox struct {
	mu  sync.Mutex
	got []event.Event
	err error
}

func (o *outbox) Send(_ context.Context, evs []event.Event) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	o.got = append(o.got, evs...)
	return nil
}

func (o *outbox) ids() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ids []string
	for _, e := range o.got {
		ids = append(ids, e.ID)
	}
	return ids
}

// A Sender that never answers does not hold the invocation: HandOverAfter after the Publish the
// flush gives up on it and puts the event in the outbox, then returns. The held send is never
// released, so only the hand-over can end this flush before its (long) deadline.
func TestAFlushPutsWhatTheSenderHasNotTakenInTheOutbox(t *testing.T) {
	s := &slowSender{release: make(chan struct{})}
	out := &outbox{}
	p := event.NewAsync(s, quiet())
	p.Outbox = out
	e := event.ModelFailoverEvent(event.Failover{FailedModel: "a", NextModel: "b", Time: now}, now)
	p.Publish(context.Background(), e)
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("Flush = %v, want the hand-over to the outbox", err)
	}
	if got := out.ids(); !slices.Equal(got, []string{e.ID}) {
		t.Errorf("outbox got %v, want %s", got, e.ID)
	}
	if st := p.Stats(); st.Deferred != 1 || st.Published != 0 || st.Failed != 0 {
		t.Errorf("Stats = %+v, want 1 deferred", st)
	}
}

func TestAFailedSendGoesToTheOutbox(t *testing.T) {
	out := &outbox{}
	p := event.NewAsync(failing{}, quiet())
	p.Outbox = out
	var told []string
	p.Unpublished = func(fate string, n int) { told = append(told, fmt.Sprint(fate, n)) }
	a, b := event.WebhookTestEvent("wh", event.Subject{}, now), event.WebhookTestEvent("wh", event.Subject{}, now)
	p.Publish(context.Background(), a, b)
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(told, []string{"outbox2"}) {
		t.Errorf("Unpublished told %v, want 2 to the outbox", told)
	}
	if got := out.ids(); !slices.Equal(got, []string{a.ID, b.ID}) {
		t.Errorf("outbox got %v, want both events", got)
	}
	if st := p.Stats(); st.Deferred != 2 || st.Failed != 0 {
		t.Errorf("Stats = %+v, want 2 deferred", st)
	}
}

// When the outbox fails too, the events are counted lost and logged whole: the last record of
// them an operator can replay.
func TestEventsTheOutboxRefusesAreLoggedWhole(t *testing.T) {
	var logs bytes.Buffer
	p := event.NewAsync(failing{}, slog.New(slog.NewJSONHandler(&logs, nil)))
	p.Outbox = &outbox{err: errors.New("queue down")}
	e := event.WebhookTestEvent("wh", event.Subject{}, now)
	p.Publish(context.Background(), e)
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Failed != 1 || st.Deferred != 0 {
		t.Errorf("Stats = %+v, want 1 failed", st)
	}
	if !strings.Contains(logs.String(), e.ID) || !strings.Contains(logs.String(), "queue down") {
		t.Errorf("log %s does not carry the lost event and the cause", logs.String())
	}
}
