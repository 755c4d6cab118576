package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/tidwall/gjson"
)

// faultCase is one upstream fault seen through the assembled gateway. The chain is always
// [first, fake/ok]: a failover reason moves to fake/ok, anything else stays on first.
type faultCase struct {
	name   string
	first  string
	stream bool
	extra  map[string]any // more request members (redundancy defaults to fast)

	status   int
	attempts []attempt
	code     string // error code: of the JSON error (status != 200) or of the stream's error frame
	// truncated: a stream served by first that breaks after its first token — an error frame and
	// no [DONE]; otherwise a 200 answer is whole (full text, [DONE] when streamed).
	truncated bool
	usage     bool          // a usage chunk must be streamed (include_usage asked)
	minTime   time.Duration // the answer cannot honestly come sooner (a timeout had to pass)
	maxTime   time.Duration // the answer must come before this (no hang, no waiting on Retry-After)
}

const next = "fake/ok"

func TestFaults(t *testing.T) {
	f := func(m string) string { return "fake/" + m }
	over := func(reason, model string) []attempt { return []attempt{failed(model, reason), served(next)} }
	stays := func(model string) []attempt { return []attempt{served(model)} }
	final := func(model string) []attempt { return []attempt{failed(model, "rejected")} }
	const def = 10 * time.Second
	usage := map[string]any{"stream_options": map[string]any{"include_usage": true}}
	patient := map[string]any{"redundancy": raw(`{"timeout_ms":20000,"first_token_timeout_ms":10000}`)}
	patientUsage := map[string]any{"redundancy": raw(`{"timeout_ms":20000,"first_token_timeout_ms":10000}`), "stream_options": map[string]any{"include_usage": true}}

	cases := []faultCase{
		// Plain.
		{name: "plain/429", first: f("error-429"), status: 200, attempts: over("rate_limit", f("error-429")), maxTime: def},
		{name: "plain/429-retry-after", first: f("error-429-retry-after"), status: 200, attempts: over("rate_limit", f("error-429-retry-after")), maxTime: 1900 * time.Millisecond},
		{name: "plain/500", first: f("error-500"), status: 200, attempts: over("server_error", f("error-500")), maxTime: def},
		{name: "plain/503", first: f("error-503"), status: 200, attempts: over("server_error", f("error-503")), maxTime: def},
		{name: "plain/reset-before-headers", first: f("reset"), status: 200, attempts: over("connection_error", f("reset")), maxTime: def},
		{name: "plain/refused", first: "down/refused", status: 200, attempts: over("connection_error", "down/refused"), maxTime: def},
		{name: "plain/hang", first: f("hang"), status: 200, attempts: over("timeout", f("hang")), minTime: 900 * time.Millisecond, maxTime: def},
		{name: "plain/slow", first: f("slow-first-token"), status: 200, attempts: over("timeout", f("slow-first-token")), minTime: 900 * time.Millisecond, maxTime: def},
		{name: "plain/cut-body", first: f("cut"), status: 200, attempts: over("connection_error", f("cut")), maxTime: def},
		{name: "plain/stall", first: f("stall"), status: 200, attempts: over("timeout", f("stall")), minTime: 900 * time.Millisecond, maxTime: def},
		{name: "plain/malformed-body", first: f("malformed"), status: 200, attempts: over("server_error", f("malformed")), maxTime: def},
		{name: "plain/no-done", first: f("no-done"), status: 200, attempts: stays(f("no-done")), maxTime: def},
		{name: "plain/tools", first: f("tools"), status: 200, attempts: stays(f("tools")), maxTime: def},
		{name: "plain/context-length", first: f("context-length"), status: 400, code: "context_length_exceeded", attempts: final(f("context-length")), maxTime: def},
		{name: "plain/content-filter", first: f("content-filter"), status: 400, code: "content_filter", attempts: final(f("content-filter")), maxTime: def},

		// Streaming: before the first content token every fault fails over unseen.
		{name: "stream/429", first: f("error-429"), stream: true, status: 200, attempts: over("rate_limit", f("error-429")), maxTime: def},
		{name: "stream/429-retry-after", first: f("error-429-retry-after"), stream: true, status: 200, attempts: over("rate_limit", f("error-429-retry-after")), maxTime: 1900 * time.Millisecond},
		{name: "stream/500", first: f("error-500"), stream: true, status: 200, attempts: over("server_error", f("error-500")), maxTime: def},
		{name: "stream/503", first: f("error-503"), stream: true, status: 200, attempts: over("server_error", f("error-503")), maxTime: def},
		{name: "stream/reset-before-headers", first: f("reset"), stream: true, status: 200, attempts: over("connection_error", f("reset")), maxTime: def},
		{name: "stream/refused", first: "down/refused", stream: true, status: 200, attempts: over("connection_error", "down/refused"), maxTime: def},
		{name: "stream/hang", first: f("hang"), stream: true, status: 200, attempts: over("timeout", f("hang")), minTime: 400 * time.Millisecond, maxTime: def},
		{name: "stream/slow-first-token", first: f("slow-first-token"), stream: true, status: 200, attempts: over("timeout", f("slow-first-token")), minTime: 400 * time.Millisecond, maxTime: 1900 * time.Millisecond},
		{name: "stream/cut-before-token", first: f("cut-before-token"), stream: true, status: 200, attempts: over("connection_error", f("cut-before-token")), maxTime: def},
		{name: "stream/malformed-first", first: f("malformed-first"), stream: true, status: 200, attempts: over("server_error", f("malformed-first")), maxTime: def},
		{name: "stream/error-event-before-token", first: f("stream-error"), stream: true, status: 200, attempts: over("server_error", f("stream-error")), maxTime: def},
		{name: "stream/with-usage-after-failover", first: f("error-500"), stream: true, extra: usage, status: 200, attempts: over("server_error", f("error-500")), usage: true, maxTime: def},

		// Streaming: after the first token the model is locked in; a break is an error frame.
		{name: "stream/cut-after-token", first: f("cut"), stream: true, status: 200, attempts: stays(f("cut")), truncated: true, maxTime: def},
		{name: "stream/malformed-after-token", first: f("malformed"), stream: true, status: 200, attempts: stays(f("malformed")), truncated: true, maxTime: def},
		{name: "stream/stall-after-tokens", first: f("stall"), stream: true, status: 200, attempts: stays(f("stall")), truncated: true, code: "stream_stalled", minTime: 900 * time.Millisecond, maxTime: def},

		// Streaming: a missing terminator is finished promptly — long before any timeout.
		{name: "stream/no-done", first: f("no-done"), stream: true, extra: patient, status: 200, attempts: stays(f("no-done")), maxTime: 5 * time.Second},
		{name: "stream/no-done+usage", first: f("no-done"), stream: true, extra: patientUsage, status: 200, attempts: stays(f("no-done")), usage: true, maxTime: 5 * time.Second},
		{name: "stream/no-done-hold", first: f("no-done-hold"), stream: true, extra: patient, status: 200, attempts: stays(f("no-done-hold")), maxTime: 5 * time.Second},
		{name: "stream/no-done-hold+usage", first: f("no-done-hold"), stream: true, extra: patientUsage, status: 200, attempts: stays(f("no-done-hold")), usage: true, maxTime: 5 * time.Second},
		{name: "stream/tools", first: f("tools"), stream: true, status: 200, attempts: stays(f("tools")), maxTime: def},

		// Final provider errors: the provider's 400, the attempts so far, never a failover.
		{name: "stream/context-length", first: f("context-length"), stream: true, status: 400, code: "context_length_exceeded", attempts: final(f("context-length")), maxTime: def},
		{name: "stream/content-filter", first: f("content-filter"), stream: true, status: 400, code: "content_filter", attempts: final(f("content-filter")), maxTime: def},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runFault(t, tc)
		})
	}
}

func runFault(t *testing.T, tc faultCase) {
	e := newEnv(t)
	extra := map[string]any{"redundancy": raw(fast)}
	for k, v := range tc.extra {
		extra[k] = v
	}
	r := e.chat(t, chatBody(t, []string{tc.first, next}, tc.stream, extra))

	if r.status != tc.status {
		t.Fatalf("status %d, want %d; body %s frames %q", r.status, tc.status, r.body, r.frames)
	}
	if r.elapsed < tc.minTime || r.elapsed > tc.maxTime {
		t.Errorf("answered after %s, want between %s and %s", r.elapsed, tc.minTime, tc.maxTime)
	}
	wantServed := ""
	if last := tc.attempts[len(tc.attempts)-1]; last.Status == "served" {
		wantServed = last.Model
	}
	failedOver := len(tc.attempts) > 1
	nextCalls := e.up.Fake.Calls("ok")
	if failedOver && nextCalls != 1 {
		t.Errorf("fake/ok received %d calls, want 1", nextCalls)
	}
	if !failedOver && nextCalls != 0 {
		t.Errorf("no failover was due, yet fake/ok received %d calls", nextCalls)
	}

	if tc.status != 200 {
		// A chain that fails before any byte was sent is plain JSON, streaming or not.
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("Content-Type %q, want application/json", ct)
		}
		j := r.json()
		if got := j.Get("error.code").String(); got != tc.code {
			t.Errorf("error.code %q, want %q (body %s)", got, tc.code, r.body)
		}
		if j.Get("error.message").String() == "" || j.Get("error.type").String() == "" {
			t.Errorf("error envelope lacks message/type: %s", r.body)
		}
		if got := attemptsOf(j.Get("error.attempts")); !equalAttempts(got, tc.attempts) {
			t.Errorf("error.attempts %+v, want %+v", got, tc.attempts)
		}
		return
	}

	var sec, top = r.json().Get("secureai"), r.json()
	if tc.stream {
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("Content-Type %q, want text/event-stream", ct)
		}
		chunks := r.chunks()
		if len(chunks) == 0 {
			t.Fatalf("no chunks streamed: %q", r.frames)
		}
		top, sec = chunks[0], chunks[0].Get("secureai")
		for i, c := range chunks {
			if got := c.Get("model").String(); got != wantServed {
				t.Errorf("chunk %d model %q, want the served model %q", i, got, wantServed)
			}
			if i > 0 && c.Get("secureai").Exists() {
				t.Errorf("chunk %d carries secureai; only the first chunk may", i)
			}
		}
		checkStreamEnd(t, tc, r)
	} else {
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("Content-Type %q, want application/json", ct)
		}
		if top.Get("object").String() != "chat.completion" {
			t.Errorf("object %q, want chat.completion: %s", top.Get("object"), r.body)
		}
		if tc.first == "fake/tools" {
			if top.Get("choices.0.message.tool_calls.0.function.name").String() != "get_weather" || top.Get("choices.0.finish_reason").String() != "tool_calls" {
				t.Errorf("tool call not passed through: %s", r.body)
			}
		} else if got := top.Get("choices.0.message.content").String(); got != openaifake.Answer {
			t.Errorf("content %q, want the full answer", got)
		}
	}
	if got := top.Get("model").String(); got != wantServed {
		t.Errorf("model %q, want the served model %q", got, wantServed)
	}
	if got := sec.Get("served_model").String(); got != wantServed {
		t.Errorf("secureai.served_model %q, want %q", got, wantServed)
	}
	if got := sec.Get("requested_model").String(); got != tc.first {
		t.Errorf("secureai.requested_model %q, want %q", got, tc.first)
	}
	// The chain has two models, so the report is always there, even when the first served.
	if got := sec.Get("failover.occurred"); !got.Exists() || got.Bool() != failedOver {
		t.Errorf("secureai.failover.occurred = %s, want %v (secureai %s)", got.Raw, failedOver, sec.Raw)
	}
	if got := attemptsOf(sec.Get("failover.attempts")); !equalAttempts(got, tc.attempts) {
		t.Errorf("secureai.failover.attempts %+v, want %+v", got, tc.attempts)
	}
}

func checkStreamEnd(t *testing.T, tc faultCase, r *result) {
	t.Helper()
	ef, hasErr := r.errorFrame()
	if tc.truncated {
		if !hasErr {
			t.Fatalf("a stream broken after its first token must end with an error frame; frames %q", r.frames)
		}
		if r.done() {
			t.Errorf("a broken stream must not end with [DONE] (it would look complete): %q", r.frames)
		}
		if last := r.frames[len(r.frames)-1]; !strings.Contains(last, `"error"`) {
			t.Errorf("the error frame must be the last frame; got %q", last)
		}
		if ef.Get("message").String() == "" || ef.Get("type").String() == "" || ef.Get("code").String() == "" {
			t.Errorf("error frame lacks message/type/code: %s", ef.Raw)
		}
		if tc.code != "" && ef.Get("code").String() != tc.code {
			t.Errorf("error frame code %q, want %q", ef.Get("code"), tc.code)
		}
		if c := r.content(); c == "" || c == openaifake.Answer || !strings.HasPrefix(openaifake.Answer, c) {
			t.Errorf("content before the break %q: want a non-empty proper prefix of the answer", c)
		}
		return
	}
	if hasErr {
		t.Fatalf("unexpected error frame %s", ef.Raw)
	}
	if !r.done() {
		t.Fatalf("stream did not end with [DONE]: %q", r.frames)
	}
	chunks := r.chunks()
	var usageChunks int
	for _, c := range chunks {
		if c.Get("usage").IsObject() {
			usageChunks++
		}
	}
	if tc.usage && usageChunks != 1 {
		t.Errorf("include_usage asked: want exactly 1 usage chunk, got %d", usageChunks)
	}
	if !tc.usage && usageChunks != 0 {
		t.Errorf("include_usage not asked, yet %d usage chunk(s) streamed", usageChunks)
	}
	if tc.first == "fake/tools" {
		return // checked in TestStreamPassthrough
	}
	if got := r.content(); got != openaifake.Answer {
		t.Errorf("streamed content %q, want the full answer", got)
	}
	var finish string
	for _, c := range chunks {
		if f := c.Get("choices.0.finish_reason"); f.Type == gjson.String {
			finish = f.Str
		}
	}
	if finish != "stop" {
		t.Errorf("finish_reason %q, want stop", finish)
	}
}
