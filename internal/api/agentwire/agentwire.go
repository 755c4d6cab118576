// Package agentwire is what the surfaces that answer in a wire of their own (Anthropic Messages,
// OpenAI Responses) share: opening the completion their request was translated into, and
// answering it — a provider's own answer or events passed through with the served model and the
// report stamped on, or the chat answer rewritten by the surface — plain or streamed, with the
// keep-alives, the first-token rule and the error event of an interrupted stream. Each surface
// supplies only how its wire writes an answer and its events.
package agentwire

import (
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/provider"
)

// Wire writes one surface's answers.
type Wire interface {
	// Answer is the whole answer to a chat completion served by served; sec is the report.
	Answer(completion []byte, served string, sec []byte) []byte
	// Events begins the event stream of an answer served by served.
	Events(out *httpapi.SSE, served string, sec []byte) Events
	// Failed ends a stream committed by keep-alives whose chain then failed (f), before any
	// model was served; sec reports the attempts.
	Failed(out *httpapi.SSE, requested string, f *fault.Error, sec []byte) error
}

// Events writes one answer's event stream.
type Events interface {
	// Start writes a translated stream's opening events (a passed-through one brings its own).
	Start() error
	// Write writes what a chunk adds: a provider's own event (Native), or a chat chunk's part.
	Write(c provider.Chunk) error
	// Finish ends a whole answer; Fail one interrupted after its first token.
	Finish() error
	Fail(message string) error
}

// Serve opens the completion in, as its surface read it (the caller's own bytes in in.Native,
// dropped what its translation left out), and answers it in w's wire.
func Serve(w http.ResponseWriter, r *http.Request, svc *completion.Service, in completion.Input, dropped []string, wire Wire, log *slog.Logger) error {
	if err := in.Chain.FromHeaders(r.Header.Get(chain.HeaderModels), r.Header.Get(chain.HeaderFallbackModels)); err != nil {
		return err
	}
	call, err := svc.Open(r.Context(), in)
	if err != nil {
		return err
	}
	if in.Stream {
		return stream(w, r, call, dropped, wire, log)
	}
	c, report, err := call.Complete(r.Context())
	if err != nil {
		return httpapi.Quiet(err)
	}
	openaiapi.ReportHeaders(w, call, c.Served, report)
	var b []byte
	if c.Response.Native {
		b = openaiapi.StampReport(c.Response.Body, "", c.Served, openaiapi.ReportJSON(call, c.Served, report, nil, nil))
	} else {
		b = wire.Answer(c.Response.Body, c.Served, openaiapi.ReportJSON(call, c.Served, report, nil, dropped))
	}
	httpapi.StartAnswer(w, len(b))
	_, _ = w.Write(b)
	httpapi.SendAnswer(w)
	return nil
}

// stream answers with the wire's event stream: the provider's own events when the serving model
// speaks the wire (passed through), else the events written from its chat chunks.
func stream(w http.ResponseWriter, r *http.Request, call *completion.Call, dropped []string, wire Wire, log *slog.Logger) error {
	var (
		st     *completion.Stream
		report chain.Report
		err    error
	)
	out := httpapi.AwaitFirstToken(w, r, func() { st, report, err = call.Stream(r.Context()) })
	if err != nil {
		if out != nil && !errors.Is(err, chain.ErrCanceled) {
			// Committed while the chain ran (keep-alives): the error is the stream's error event.
			f := fault.From(err)
			httpapi.Logger(log).WarnContext(r.Context(), "stream failed before its first token, after keep-alives", "request_id",
				identity.RequestID(r.Context()), "status", httpapi.Status(f), "code", f.Code, "err", err)
			sec := openaiapi.ReportJSON(call, "", chain.Report{Attempts: chain.AttemptsOf(err)}, nil, nil)
			_ = wire.Failed(out, call.Plan.Targets[0].Model, f, sec)
			return nil
		}
		return httpapi.Quiet(err)
	}
	defer st.Close()
	c, err := st.Next() // the first chunk, already in hand
	if c.Native {
		dropped = nil // nothing was translated
	}
	if out == nil {
		openaiapi.ReportHeaders(w, call, st.Served, report)
		out = httpapi.StartSSE(w)
	}
	out.Coalesce(st.Ready)
	b := &batch{ev: wire.Events(out, st.Served, openaiapi.ReportJSON(call, st.Served, report, nil, dropped))}
	if !c.Native && out.Batch(b.ev.Start) != nil {
		return nil
	}
	write := b.write // one method value for the whole stream, not one per chunk
	for ; err == nil; c, err = st.Next() {
		b.c = c
		if out.Batch(write) != nil {
			return nil // the caller went away; Close cancels the upstream call
		}
	}
	switch {
	case err == io.EOF:
		_ = out.Batch(b.ev.Finish)
	case !errors.Is(err, chain.ErrCanceled):
		in := completion.AsInterruption(err)
		httpapi.Logger(log).WarnContext(r.Context(), "stream interrupted after first token", "request_id",
			identity.RequestID(r.Context()), "code", in.Code, "err", err)
		_ = b.ev.Fail(in.Message)
	}
	return nil
}

// batch hands one chunk at a time to the events, as SSE.Batch calls it.
type batch struct {
	ev Events
	c  provider.Chunk
}

func (b *batch) write() error { return b.ev.Write(b.c) }
