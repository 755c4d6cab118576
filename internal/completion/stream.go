package completion

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/tidwall/gjson"
)

// Stream is a served stream: its model is locked in, and the chunks up to and including the
// first content token are already in hand.
type Stream struct {
	Served string
	// Usage is the latest usage the provider reported, once it has; after a resume, the caller's
	// whole answer (both parts' completion, the original prompt), as the caller is told it.
	Usage *provider.Usage

	pending  []provider.Chunk
	up       provider.Stream
	ended    bool // the provider finished before or with the first token
	native   bool // the provider's own events pass through (provider.Chunk.Native)
	finished bool // a finish_reason went by
	stall    time.Duration
	timer    *time.Timer
	ctx      context.Context
	cancel   context.CancelCauseFunc
	release  func()

	call   *Call
	report chain.Report
	err    error // the interruption that ended the stream, once one did
	whole  bool  // io.EOF was reached
	closed bool

	// on_interrupt: resume (resume.go); zero unless the plan asks for it.
	parent  context.Context // the request's context, which a continuation runs under
	resume  *resumption
	cancels []context.CancelCauseFunc // continuations' attempt contexts, canceled by Close
}

// Stream runs the call's chain until one attempt yields its first content token. Until then
// nothing has been sent to the caller, so a failed attempt is invisible and an exhausted chain is a
// plain error (carrying the attempts made). The caller must Close the stream it gets.
func (c *Call) Stream(ctx context.Context) (*Stream, chain.Report, error) {
	if err := c.runSteps(ctx, true); err != nil {
		c.finish(ctx, Outcome{Err: err})
		return nil, chain.Report{}, err
	}
	res, err := chain.Run(ctx, c.engine(), c.Plan, true, func(ctx context.Context, t chain.Target) (*Stream, error) {
		route, req, err := c.request(ctx, t)
		if err != nil {
			return nil, err
		}
		return open(ctx, route.Provider, req, t.Timeout)
	})
	if err != nil {
		c.finish(ctx, Outcome{Report: res.Report, Err: err})
		return nil, res.Report, err
	}
	c.served(res.Report)
	st := res.Value
	if tr := c.trace; tr != nil && len(st.pending) > 0 {
		tr.responseModel = gjson.GetBytes(st.pending[0].Data, "model").String()
	}
	st.Served, st.release, st.call, st.report, st.parent = res.Served, res.Release, c, res.Report, ctx
	if c.Plan.OnInterrupt == chain.InterruptResume {
		st.resume = &resumption{}
		for _, p := range st.pending {
			st.resume.track(p.Data)
		}
	}
	return st, res.Report, nil
}

func open(ctx context.Context, p provider.Provider, req *provider.Request, stall time.Duration) (*Stream, error) {
	sctx, cancel := context.WithCancelCause(ctx)
	up, err := p.Stream(sctx, req)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	st := &Stream{up: up, stall: stall, ctx: sctx, cancel: cancel}
	for {
		c, err := up.Recv()
		if err == io.EOF {
			// A complete answer with no content (an empty reply) is still an answer.
			st.ended = true
			return st, nil
		}
		if err != nil {
			up.Close()
			cancel(nil)
			return nil, err
		}
		st.track(c)
		c.Data = bytes.Clone(c.Data) // held past the next Recv
		st.pending = append(st.pending, c)
		if c.Content {
			return st, nil
		}
	}
}

// Next returns the next chunk, or io.EOF when the stream is complete. Any other error is an
// interruption after the first token: the caller ends the stream with an error frame.
func (st *Stream) Next() (provider.Chunk, error) {
	if len(st.pending) > 0 {
		c := st.pending[0]
		st.pending = st.pending[1:]
		return c, nil
	}
	if st.ended {
		st.whole = st.err == nil
		return provider.Chunk{}, io.EOF
	}
	if st.timer == nil {
		st.timer = time.AfterFunc(st.stall, func() { st.cancel(chain.ErrStalled) })
	} else {
		st.timer.Reset(st.stall)
	}
	c, err := st.up.Recv()
	st.timer.Stop()
	if err != nil {
		st.ended = true
		if err == io.EOF || (st.finished && errors.Is(context.Cause(st.ctx), chain.ErrStalled)) {
			st.whole = true
			return provider.Chunk{}, io.EOF
		}
		switch cause := context.Cause(st.ctx); {
		case errors.Is(cause, chain.ErrStalled):
			st.err = &Interruption{Code: "stream_stalled", Message: fmt.Sprintf("the provider sent nothing for %s after the stream began", st.stall)}
		case errors.Is(cause, context.DeadlineExceeded):
			// The gateway's own deadline, not the provider's fault: say so.
			st.err = &Interruption{Code: "deadline_exceeded", Message: "the request deadline was reached before the stream ended", Err: err}
		case errors.Is(cause, context.Canceled):
			st.err = chain.ErrCanceled // the caller went away
		default:
			st.err = interruption(err)
		}
		if st.resumeOnNext() {
			return st.Next()
		}
		return provider.Chunk{}, st.err
	}
	st.track(c)
	if st.resume != nil {
		c = st.resume.chunk(c)
	}
	return c, nil
}

func (st *Stream) track(c provider.Chunk) {
	if c.Usage != nil {
		st.Usage = c.Usage
		if r := st.resume; r != nil && r.splice {
			// A continuation's usage: the caller's is the whole answer's.
			whole := r.callerUsage(*c.Usage)
			r.cont, st.Usage = c.Usage, &whole
		}
	}
	if c.Finish {
		st.finished = true
	}
	st.native = st.native || c.Native
}

// Ready reports whether the next chunk is already at hand, so a writer may hold its flush.
func (st *Stream) Ready() bool {
	if len(st.pending) > 0 {
		return true
	}
	b, ok := st.up.(provider.Buffered)
	return ok && !st.ended && b.Buffered()
}

// Close releases the upstream connection and tells the observer how the stream ended: whole,
// interrupted, or abandoned by a caller that went away. It is safe to call more than once.
func (st *Stream) Close() {
	if st.closed {
		return
	}
	st.closed = true
	if st.timer != nil {
		st.timer.Stop()
	}
	st.up.Close()
	st.cancel(context.Canceled)
	for _, cancel := range st.cancels {
		cancel(context.Canceled)
	}
	if st.release != nil {
		st.release()
	}
	if st.call != nil {
		o := Outcome{Served: st.Served, Usage: st.Usage, Report: st.report, Err: st.err}
		if r := st.resume; r != nil && r.model != "" {
			o.Resumed, o.Usage, o.ResumedUsage = r.model, r.firstUsage(st.call), r.cont
		}
		if !st.whole && o.Err == nil {
			o.Err = chain.ErrCanceled
		}
		st.call.finish(st.ctx, o)
	}
}

// Interruption is a stream that broke after its first token. It is shown to the caller as an
// error frame; it never fails over.
type Interruption struct {
	Code    string
	Message string
	Err     error
}

func (e *Interruption) Error() string { return e.Message }
func (e *Interruption) Unwrap() error { return e.Err }

// Fault implements fault.Describer.
func (e *Interruption) Fault() *fault.Error {
	return fault.New(fault.Interrupted, "Stream interrupted", e.Message).WithCode(e.Code)
}

// AsInterruption returns the Interruption err carries, or a generic one for any other error.
func AsInterruption(err error) *Interruption {
	var in *Interruption
	if errors.As(err, &in) {
		return in
	}
	return &Interruption{Code: "stream_interrupted", Message: "the stream broke off", Err: err}
}

func interruption(err error) *Interruption {
	var pe *provider.Error
	if errors.As(err, &pe) {
		code := pe.Code
		if code == "" {
			code = "stream_interrupted"
		}
		return &Interruption{Code: code, Message: "the provider stream broke off: " + pe.Message, Err: err}
	}
	if errors.Is(err, context.Canceled) {
		return &Interruption{Code: "stream_canceled", Message: "the stream was canceled", Err: err}
	}
	return &Interruption{Code: "stream_interrupted", Message: "the provider stream broke off", Err: err}
}
