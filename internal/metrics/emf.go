package metrics

import (
	"context"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
)

// Namespace is the CloudWatch namespace of the EMF records; the dashboard and alarms read it.
const Namespace = "SecureAIGateway"

// directive opens a metric directive, up to its dimension sets.
const directive = `{"Namespace":"` + Namespace + `","Dimensions":`

// EMF is the Lambda output: one CloudWatch Embedded Metric Format record per request, one JSON
// line written to W (the function's stdout, which Lambda sends to its log group; CloudWatch
// extracts the metrics from it — no AWS call, no agent). A breaker opening, a webhook delivery
// and unpublished events are each a small record of their own.
//
// A record's dimensions have one value each, so a request's record carries:
//   - Requests, Attempts, FailedAttempts, Retries, ResumedStreams, LimitRefusals by
//     [Surface, Outcome] and [Surface];
//   - Latency (the serving attempt's), TimeToFirstToken (streams), InputTokens, OutputTokens and
//     CostMicroUSD by [Model], the model that served, when one did;
//   - Failovers (1) by [FailedModel, Reason], [FailedModel, NextModel, Reason] and [Surface]: the
//     request's first failover, when it had one (each failover also has its own log line); by
//     Surface, beside Requests by Surface, it is the failover rate an alarm can read (alarms take
//     no SEARCH over model names).
//
// Per-attempt latencies of the models that failed are in the Prometheus output and the request's
// log lines, not in its record.
type EMF struct {
	W   io.Writer
	Now func() time.Time

	mu  sync.Mutex // one record is one Write, whole
	buf []byte
}

// NewEMF returns an EMF output writing to w.
func NewEMF(w io.Writer) *EMF { return &EMF{W: w, Now: time.Now} }

// FailedOver implements completion.Observer: the record is written when the request ends.
func (e *EMF) FailedOver(context.Context, completion.Failover) {}

// Finished implements completion.Observer: one record for the request.
func (e *EMF) Finished(_ context.Context, o completion.Outcome) {
	var r Request
	Summarize(&o, &r)
	e.Add(&r)
}

// Add writes the record of one request.
func (e *EMF) Add(r *Request) {
	var attempts, failed, retries, latency int64
	for i := range r.Lines {
		a := &r.Lines[i]
		switch a.Status {
		case chain.Served:
			latency = a.LatencyMS
		case chain.Failed:
			failed++
		case chain.Skipped, chain.Resumed:
			continue
		}
		attempts++
		if a.Retry > 0 {
			retries++
		}
	}
	resumed, refused := int64(0), int64(0)
	if r.Resumed != "" {
		resumed = 1
	}
	if r.Refusal != "" {
		refused = 1
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.head()
	b = append(b, directive+`[["Surface","Outcome"],["Surface"]],"Metrics":[`...)
	b = metricDefs(b, &Requests, &Attempts, &FailedAttempt, &Retries, &Resumed, &Refusals)
	b = append(b, "]}"...)
	if r.Served != "" {
		b = append(b, `,`+directive+`[["Model"]],"Metrics":[`...)
		b = metricDefs(b, &AttemptTime, &InputTokens, &OutputTokens)
		if r.Stream {
			b = append(b, ',')
			b = metricDefs(b, &FirstToken)
		}
		if r.Billed[0] {
			b = append(b, ',')
			b = metricDefs(b, &Cost)
		}
		b = append(b, "]}"...)
	}
	if r.First.Failed != "" {
		b = append(b, `,`+directive+`[["FailedModel","Reason"],["FailedModel","NextModel","Reason"],["Surface"]],"Metrics":[`...)
		b = metricDefs(b, &Failovers)
		b = append(b, "]}"...)
	}
	b = e.endDirectives(b)
	b = member(b, "Surface", r.Surface)
	b = member(b, "Outcome", r.Outcome)
	b = value(b, Requests.EMF, 1)
	b = value(b, Attempts.EMF, attempts)
	b = value(b, FailedAttempt.EMF, failed)
	b = value(b, Retries.EMF, retries)
	b = value(b, Resumed.EMF, resumed)
	b = value(b, Refusals.EMF, refused)
	if r.Served != "" {
		// The serving model's part only; a resumed stream's second model counts in ResumedStreams.
		b = member(b, "Model", r.Served)
		b = value(b, AttemptTime.EMF, latency)
		b = value(b, InputTokens.EMF, r.In[0])
		b = value(b, OutputTokens.EMF, r.Out[0])
		if r.Stream {
			b = value(b, FirstToken.EMF, latency)
		}
		if r.Billed[0] {
			b = value(b, Cost.EMF, r.Micros[0])
		}
	}
	if r.First.Failed != "" {
		b = member(b, "FailedModel", r.First.Failed)
		b = member(b, "NextModel", r.First.Next)
		b = member(b, "Reason", string(r.First.Reason))
		b = value(b, Failovers.EMF, 1)
	}
	if r.RequestID != "" {
		b = member(b, "RequestId", r.RequestID) // a property, never a dimension
	}
	e.write(b)
}

// BreakerOpened implements Recorder: a record of its own.
func (e *EMF) BreakerOpened(scope, cause string) {
	e.one(&BreakerOpens, 1, "Scope", scope, "Cause", cause)
}

// WebhookDelivery implements Recorder: a record of its own.
func (e *EMF) WebhookDelivery(outcome string) { e.one(&Webhooks, 1, "Outcome", outcome, "", "") }

// EventsUnpublished implements Recorder: a record of its own.
func (e *EMF) EventsUnpublished(fate string, n int) {
	e.one(&Unpublished, int64(n), "Fate", fate, "", "")
}

// one writes a record of one metric by up to two dimensions.
func (e *EMF) one(in *Instrument, v int64, d1, v1, d2, v2 string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.head()
	b = append(b, directive+`[[`...)
	b = jsonString(b, d1)
	if d2 != "" {
		b = append(b, ',')
		b = jsonString(b, d2)
	}
	b = append(b, `]],"Metrics":[`...)
	b = metricDefs(b, in)
	b = append(b, "]}"...)
	b = e.endDirectives(b)
	b = member(b, d1, v1)
	if d2 != "" {
		b = member(b, d2, v2)
	}
	b = value(b, in.EMF, v)
	e.write(b)
}

// head starts a record: its timestamp and the opening of its list of metric directives.
func (e *EMF) head() []byte {
	b := append(e.buf[:0], `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, e.Now().UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":[`...)
	return b
}

// endDirectives closes the directive list; top-level members follow.
func (e *EMF) endDirectives(b []byte) []byte { return append(b, "]}"...) }

func (e *EMF) write(b []byte) {
	b = append(b, "}\n"...)
	e.buf = b
	_, _ = e.W.Write(b)
}

// metricDefs appends the directive's metric definitions.
func metricDefs(b []byte, ins ...*Instrument) []byte {
	for i, in := range ins {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Name":`...)
		b = jsonString(b, in.EMF)
		b = append(b, `,"Unit":`...)
		b = jsonString(b, in.Unit)
		b = append(b, '}')
	}
	return b
}

func member(b []byte, name, v string) []byte {
	b = append(b, ',')
	b = jsonString(b, name)
	b = append(b, ':')
	return jsonString(b, v)
}

func value(b []byte, name string, v int64) []byte {
	b = append(b, ',')
	b = jsonString(b, name)
	b = append(b, ':')
	return strconv.AppendInt(b, v, 10)
}

// jsonString appends s as a JSON string.
func jsonString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c < utf8.RuneSelf:
			b = append(b, c)
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		i++
	}
	return append(b, '"')
}
