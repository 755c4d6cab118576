package completion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// resumption is what on_interrupt: resume needs of a stream: the text the caller has received,
// whether a tool call was under way, and, once a continuation took over, how to splice its chunks
// into the same answer (the first chunk's id, no second role delta).
type resumption struct {
	text    strings.Builder
	chunkID string
	inTool  bool
	model   string // the model that continued; "" until one did
	splice  bool
	// dropPrefix is whitespace cut from the end of the prefix (Anthropic refuses a prefill that
	// ends with it): the caller has it already, so it is cut from the continuation's first text.
	dropPrefix string
	// cont is the continuation's own usage as its provider reported it (what its model is billed),
	// before it is turned into the caller's whole answer.
	cont *provider.Usage
}

// chunk tracks a chunk on its way to the caller and, after a resume, makes the continuation's
// chunk one of the same answer.
func (r *resumption) chunk(c provider.Chunk) provider.Chunk {
	if r.splice {
		data, err := sjson.SetBytes(c.Data, "id", r.chunkID)
		if err == nil {
			data, err = sjson.DeleteBytes(data, "choices.0.delta.role")
		}
		if c.Usage != nil && err == nil && gjson.GetBytes(data, "usage").IsObject() {
			u := r.callerUsage(*c.Usage)
			data, err = sjson.SetRawBytes(data, "usage", fmt.Appendf(nil, `{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`,
				u.PromptTokens, u.CompletionTokens, u.PromptTokens+u.CompletionTokens))
		}
		if content := gjson.GetBytes(data, "choices.0.delta.content"); err == nil && r.dropPrefix != "" && content.Str != "" {
			data, err = sjson.SetBytes(data, "choices.0.delta.content", strings.TrimPrefix(content.Str, r.dropPrefix))
			r.dropPrefix = ""
		}
		if err == nil {
			c.Data = data
		}
		return c
	}
	r.track(c.Data)
	return c
}

func (r *resumption) track(data []byte) {
	f := gjson.GetManyBytes(data, "id", "choices.0.delta.content", "choices.0.delta.tool_calls")
	if r.chunkID == "" {
		r.chunkID = f[0].String()
	}
	r.text.WriteString(f[1].String())
	if f[2].Exists() && f[2].Type != gjson.Null {
		r.inTool = true
	}
}

// Resumed reports whether another model continued this stream; Report then tells how.
func (st *Stream) Resumed() bool { return st.resume != nil && st.resume.model != "" }

// Report is the chain's report, with the resume once one happened.
func (st *Stream) Report() chain.Report { return st.report }

// ChunkID is the id every chunk of this answer carries.
func (st *Stream) ChunkID() string {
	if st.resume == nil {
		return ""
	}
	return st.resume.chunkID
}

// firstUsage is the interrupted model's share, estimated: the prompt from its size, the output
// from the text it delivered (about four characters a token).
func (r *resumption) firstUsage(c *Call) *provider.Usage {
	return &provider.Usage{PromptTokens: billing.EstimateTokens(len(c.Input.Body)), CompletionTokens: r.delivered()}
}

// delivered is the interrupted model's output in tokens, estimated from the text it delivered.
func (r *resumption) delivered() int { return billing.EstimateTokens(r.text.Len()) }

// callerUsage is the caller's whole answer from the continuation's usage cont (SPEC 7): the
// continuation's prompt was the original request plus the delivered text, so the original
// prompt is cont's less that text, and the answer's completion is both parts'. The total is the
// continuation's, split as the caller sees it.
func (r *resumption) callerUsage(cont provider.Usage) provider.Usage {
	first := r.delivered()
	return provider.Usage{PromptTokens: max(0, cont.PromptTokens-first), CompletionTokens: first + cont.CompletionTokens}
}

// ModelUsage is one model's part of a resumed answer, for the report.
type ModelUsage struct {
	Model string `json:"model"`
	// Provider names the deployment, for a model served by several (a stream may resume on
	// another deployment of the model that broke off); "" otherwise.
	Provider         string `json:"provider,omitempty"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	// Estimated is true for the interrupted model, which reported no usage: its part is
	// estimated from the request's and the delivered text's sizes (and billed so).
	Estimated bool `json:"estimated,omitempty"`
}

// UsageByModel is each model's part of a resumed answer once the stream ended (nil before, or
// when no other model continued it): the interrupted one estimated, the continuation as its
// provider reported it.
func (st *Stream) UsageByModel() []ModelUsage {
	r := st.resume
	if r == nil || r.model == "" || r.cont == nil {
		return nil
	}
	first, served, resumed := r.firstUsage(st.call), lineWith(st.report, chain.Served), lineWith(st.report, chain.Resumed)
	return []ModelUsage{
		{Model: served.Model, Provider: served.Provider, PromptTokens: first.PromptTokens, CompletionTokens: first.CompletionTokens, Estimated: true},
		{Model: resumed.Model, Provider: resumed.Provider, PromptTokens: r.cont.PromptTokens, CompletionTokens: r.cont.CompletionTokens},
	}
}

// resumeOnNext continues an interrupted stream on the next target of the chain able to continue
// an assistant prefix, when the plan asks for it: the original messages plus the delivered text
// as the assistant's prefix, streamed on into the same answer. The next target is the one an
// attempt that failed before its first token would have gone to: the remaining deployments of the
// model that broke off, then the later models. It reports whether the stream goes on; when it
// does not, the original interruption stands (a refused continuation never replaces it). Only one
// resume per stream, never inside a tool call, never past the deadline or after the caller left.
func (st *Stream) resumeOnNext() bool {
	r := st.resume
	var in *Interruption
	// A provider's own events passed through (a Messages or Responses stream to a provider of
	// that wire) cannot be spliced with another model's chat chunks: such a stream ends with the
	// interruption, as any stream does without on_interrupt.
	if r == nil || r.model != "" || r.inTool || st.native || !errors.As(st.err, &in) || in.Code == "deadline_exceeded" || st.parent.Err() != nil {
		return false
	}
	c := st.call
	served, from := lineWith(st.report, chain.Served), -1
	for i, t := range c.Plan.Targets {
		if t.Model == served.Model && t.Provider == served.Provider {
			from = i
		}
	}
	for _, t := range c.Plan.Targets[from+1:] {
		if t.Skip != "" {
			continue // never tried: a deployment the policy forbids
		}
		route := c.routeOf(t)
		if !route.Model.ContinuePrefix {
			continue // passed over: it cannot continue a prefix
		}
		start := time.Now()
		next, cancel, err := st.continueOn(t, route)
		line := chain.Attempt{Model: t.Model, Provider: t.Provider, Status: chain.Resumed, Reason: interruptionReason(in),
			LatencyMS: time.Since(start).Milliseconds(), CharsDelivered: utf8.RuneCountInString(r.text.String())}
		if err != nil {
			line.Status, line.Reason = chain.Failed, chain.ReasonOf(err)
			if line.Reason == "" {
				line.Reason = chain.Rejected
			}
			st.report.Attempts = append(st.report.Attempts, line)
			return false
		}
		st.report.Attempts = append(st.report.Attempts, line)
		st.report.Occurred = true
		st.up.Close()
		st.cancel(context.Canceled) // the interrupted attempt's context: nothing else ends it
		st.cancels = append(st.cancels, cancel)
		st.up, st.ctx, st.cancel, st.stall = next.up, next.ctx, next.cancel, t.Timeout
		st.ended, st.finished, st.err = next.ended, false, nil
		r.model, r.splice = t.Model, true
		st.pending = st.pending[:0]
		for _, p := range next.pending {
			st.track(p)
			st.pending = append(st.pending, r.chunk(p))
		}
		return true
	}
	return false
}

// continueOn opens the continuation on t: a governed attempt (checks and its own token) bounded
// by t's first-token timeout, like any attempt of the chain.
func (st *Stream) continueOn(t chain.Target, route catalog.Route) (*Stream, context.CancelCauseFunc, error) {
	c := st.call
	prefix := st.resume.text.String()
	if route.Wire != "openai" {
		trimmed := strings.TrimRight(prefix, " \t\r\n")
		st.resume.dropPrefix, prefix = prefix[len(trimmed):], trimmed
	}
	body, err := continuation(c.Input.Body, prefix, route.Wire)
	if err != nil {
		return nil, nil, err
	}
	req := newRequest(route, body)
	if req.OnSend, err = c.govern(st.parent, t, route); err != nil {
		return nil, nil, err
	}
	actx, cancel := context.WithCancelCause(st.parent)
	timer := time.AfterFunc(min(t.Timeout, t.FirstTokenTimeout), func() { cancel(errContinuationTimeout) })
	next, err := open(actx, route.Provider, req, t.Timeout)
	timer.Stop()
	if err == nil && errors.Is(context.Cause(actx), errContinuationTimeout) {
		next.Close()
		err = errContinuationTimeout
	}
	if err != nil {
		cancel(context.Canceled)
		return nil, nil, err
	}
	return next, cancel, nil
}

var errContinuationTimeout = errors.New("completion: the continuation sent no token in time")

// continuation is body with the delivered text appended as the assistant's unfinished message.
// Anthropic and Bedrock continue a final assistant message natively; an OpenAI-compatible server
// that can (vLLM and others with continue_prefix in the catalog) is asked to with
// continue_final_message.
func continuation(body []byte, delivered, wire string) ([]byte, error) {
	content, err := json.Marshal(delivered)
	if err != nil {
		return nil, err
	}
	msg := append(append([]byte(`{"role":"assistant","content":`), content...), '}')
	out, err := sjson.SetRawBytes(body, "messages.-1", msg)
	if err != nil || wire != "openai" {
		return out, err
	}
	if out, err = sjson.SetBytes(out, "continue_final_message", true); err != nil {
		return nil, err
	}
	return sjson.SetBytes(out, "add_generation_prompt", false)
}

// interruptionReason names an interruption as a failover reason for the report.
func interruptionReason(in *Interruption) chain.Reason {
	if in.Code == "stream_stalled" {
		return chain.Timeout
	}
	if r := chain.ReasonOf(in.Err); r != "" {
		return r
	}
	return chain.ConnectionError
}
