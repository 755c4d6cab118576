// Package eventbridge publishes the gateway's events to its EventBridge bus and reads them back
// from the envelope a rule delivers to SQS. Every event goes out with source Source and
// detail-type = the event type, its detail the event envelope, so subscribers' rules match on
// those two fields.
package eventbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	eb "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
)

// Source is the source of every event the gateway puts on its bus.
const Source = "secureai.gateway"

// maxEntries is PutEvents' limit per call.
const maxEntries = 10

// API is the part of the EventBridge client the sender uses.
type API interface {
	PutEvents(ctx context.Context, in *eb.PutEventsInput, opts ...func(*eb.Options)) (*eb.PutEventsOutput, error)
}

// Sender puts events on a bus (an event.Sender; wrap it in event.NewAsync).
type Sender struct {
	api     API
	bus     string
	retries int
	backoff time.Duration
}

// New returns a sender to the bus named bus (its name or ARN).
func New(api API, bus string) *Sender {
	return &Sender{api: api, bus: bus, retries: 2, backoff: 50 * time.Millisecond}
}

// FailedEntry is an event EventBridge did not accept.
type FailedEntry struct {
	EventID string
	Code    string
	Message string
}

// PutError lists the events that were not put, after retries.
type PutError struct {
	Failed []FailedEntry
	Err    error // the call's own error, when the whole call failed
}

func (e *PutError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("eventbridge: PutEvents failed for %d events: %v", len(e.Failed), e.Err)
	}
	return fmt.Sprintf("eventbridge: %d events not put (first: %s %s)", len(e.Failed), e.Failed[0].Code, e.Failed[0].Message)
}
func (e *PutError) Unwrap() error { return e.Err }

// retryable are the per-entry error codes worth another try; others (a malformed entry, an
// unauthorised bus) fail the same way again.
func retryable(code string) bool { return code == "InternalFailure" || code == "ThrottlingException" }

// Send implements event.Sender: batches of at most 10, and entries of a partial failure retried
// only when their code says a retry can succeed.
func (s *Sender) Send(ctx context.Context, events []event.Event) error {
	var failed []FailedEntry
	var callErr error
	for start := 0; start < len(events); start += maxEntries {
		batch := events[start:min(start+maxEntries, len(events))]
		f, err := s.put(ctx, batch)
		failed = append(failed, f...)
		callErr = errors.Join(callErr, err)
	}
	if len(failed) > 0 {
		return &PutError{Failed: failed, Err: callErr}
	}
	return nil
}

func (s *Sender) put(ctx context.Context, batch []event.Event) ([]FailedEntry, error) {
	entries := make([]types.PutEventsRequestEntry, len(batch))
	ids := make([]string, len(batch))
	for i, e := range batch {
		detail, err := json.Marshal(e)
		if err != nil {
			return []FailedEntry{{EventID: e.ID, Code: "Encoding", Message: err.Error()}}, nil
		}
		entries[i] = types.PutEventsRequestEntry{EventBusName: aws.String(s.bus), Source: aws.String(Source),
			DetailType: aws.String(string(e.Type)), Detail: aws.String(string(detail)), Time: aws.Time(e.Created)}
		ids[i] = e.ID
	}
	var failed []FailedEntry
	for try := 0; ; try++ {
		out, err := s.api.PutEvents(ctx, &eb.PutEventsInput{Entries: entries})
		if err != nil {
			// The SDK already retried the call itself.
			for _, id := range ids {
				failed = append(failed, FailedEntry{EventID: id, Code: "CallFailed", Message: err.Error()})
			}
			return failed, err
		}
		var again []types.PutEventsRequestEntry
		var againIDs []string
		for i, r := range out.Entries {
			code := aws.ToString(r.ErrorCode)
			if code == "" || i >= len(entries) {
				continue
			}
			if retryable(code) && try < s.retries {
				again, againIDs = append(again, entries[i]), append(againIDs, ids[i])
				continue
			}
			failed = append(failed, FailedEntry{EventID: ids[i], Code: code, Message: aws.ToString(r.ErrorMessage)})
		}
		if len(again) == 0 {
			return failed, nil
		}
		entries, ids = again, againIDs
		select {
		case <-ctx.Done():
			for _, id := range ids {
				failed = append(failed, FailedEntry{EventID: id, Code: "Cancelled", Message: context.Cause(ctx).Error()})
			}
			return failed, context.Cause(ctx)
		case <-time.After(s.backoff << try):
		}
	}
}

// Envelope is an EventBridge event as a rule delivers it to an SQS queue.
type Envelope struct {
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       time.Time       `json:"time"`
	Detail     json.RawMessage `json:"detail"`
}

// Decode reads the gateway event out of an SQS message body holding an EventBridge envelope.
func Decode(body []byte) (event.Event, error) {
	var env Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return event.Event{}, fault.Invalid("body", "not an EventBridge event: "+err.Error())
	}
	if env.Source != Source {
		return event.Event{}, fault.Invalid("source", fmt.Sprintf("source %q is not %s", env.Source, Source))
	}
	var e event.Event
	if err := json.Unmarshal(env.Detail, &e); err != nil {
		return event.Event{}, fault.Invalid("detail", "detail is not a gateway event: "+err.Error())
	}
	if string(e.Type) != env.DetailType {
		return event.Event{}, fault.Invalid("detail-type", fmt.Sprintf("detail-type %q differs from the event's type %q", env.DetailType, e.Type))
	}
	return e, e.Validate()
}
