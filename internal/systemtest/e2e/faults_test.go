package e2e

import (
	"cmp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
)

// faultCase is one upstream fault seen through the assembled gateway, on every surface. The chain
// is [first, second] (second: fake/ok unless the row names another): a failover reason moves to
// second, anything else stays on first.
type faultCase struct {
	name       string
	first      string
	second     string
	stream     bool
	redundancy string // the chain's options; fast unless the row names others
	usage      bool   // the caller asks for usage where a surface makes it optional (a report must come)

	fails      failKind  // how the whole request fails; succeeds: a 200 answer
	code       string    // rejected: the provider's error code
	retryAfter bool      // a failure that says when to come back (Retry-After: 2, x-should-retry: true)
	attempts   []attempt // the failover report, or the error's attempts
	// truncated: a stream served by first that breaks after its first content — the surface's
	// error event last, nothing that looks finished; otherwise a 200 answer is whole.
	truncated  bool
	streamCode string        // truncated: the error frame's code, on the surfaces whose frame has one
	minTime    time.Duration // the answer cannot honestly come sooner (a timeout had to pass)
	maxTime    time.Duration // the answer must come before this (no hang, no waiting on Retry-After)
}

const next = "fake/ok"

// toolCall is fake/tools' call, as every surface's view names it.
const toolCall = `get_weather({"city":"Paris"})`

// TestFaults is the conformance matrix: every row runs on every surface (surfaces), and each
// must make the same failover decision and give the same report, in its own wire's answers,
// streams, status codes and error envelopes.
func TestFaults(t *testing.T) {
	f := func(m string) string { return "fake/" + m }
	anth := func(m string) string { return "anth/" + m }
	resp := func(m string) string { return "resp/" + m }
	over := func(reason, model string) []attempt { return []attempt{failed(model, reason), served(next)} }
	stays := func(model string) []attempt { return []attempt{served(model)} }
	final := func(model string) []attempt { return []attempt{failed(model, "rejected")} }
	const def = 10 * time.Second
	const patient = `{"timeout_ms":20000,"first_token_timeout_ms":10000}`

	cases := []faultCase{
		// Plain.
		{name: "plain/429", first: f("error-429"), attempts: over("rate_limit", f("error-429")), maxTime: def},
		{name: "plain/429-retry-after", first: f("error-429-retry-after"), attempts: over("rate_limit", f("error-429-retry-after")), maxTime: 1900 * time.Millisecond},
		{name: "plain/500", first: f("error-500"), attempts: over("server_error", f("error-500")), maxTime: def},
		{name: "plain/503", first: f("error-503"), attempts: over("server_error", f("error-503")), maxTime: def},
		{name: "plain/reset-before-headers", first: f("reset"), attempts: over("connection_error", f("reset")), maxTime: def},
		{name: "plain/refused", first: "down/refused", attempts: over("connection_error", "down/refused"), maxTime: def},
		{name: "plain/hang", first: f("hang"), attempts: over("timeout", f("hang")), minTime: 900 * time.Millisecond, maxTime: def},
		{name: "plain/slow", first: f("slow-first-token"), attempts: over("timeout", f("slow-first-token")), minTime: 900 * time.Millisecond, maxTime: def},
		{name: "plain/cut-body", first: f("cut"), attempts: over("connection_error", f("cut")), maxTime: def},
		{name: "plain/stall", first: f("stall"), attempts: over("timeout", f("stall")), minTime: 900 * time.Millisecond, maxTime: def},
		{name: "plain/malformed-body", first: f("malformed"), attempts: over("server_error", f("malformed")), maxTime: def},
		{name: "plain/no-done", first: f("no-done"), attempts: stays(f("no-done")), maxTime: def},
		{name: "plain/tools", first: f("tools"), attempts: stays(f("tools")), maxTime: def},
		{name: "plain/context-length", first: f("context-length"), fails: rejected, code: "context_length_exceeded", attempts: final(f("context-length")), maxTime: def},
		{name: "plain/content-filter", first: f("content-filter"), fails: rejected, code: "content_filter", attempts: final(f("content-filter")), maxTime: def},

		// Streaming: before the first content token every fault fails over unseen.
		{name: "stream/429", first: f("error-429"), stream: true, attempts: over("rate_limit", f("error-429")), maxTime: def},
		{name: "stream/429-retry-after", first: f("error-429-retry-after"), stream: true, attempts: over("rate_limit", f("error-429-retry-after")), maxTime: 1900 * time.Millisecond},
		{name: "stream/500", first: f("error-500"), stream: true, attempts: over("server_error", f("error-500")), maxTime: def},
		{name: "stream/503", first: f("error-503"), stream: true, attempts: over("server_error", f("error-503")), maxTime: def},
		{name: "stream/reset-before-headers", first: f("reset"), stream: true, attempts: over("connection_error", f("reset")), maxTime: def},
		{name: "stream/refused", first: "down/refused", stream: true, attempts: over("connection_error", "down/refused"), maxTime: def},
		{name: "stream/hang", first: f("hang"), stream: true, attempts: over("timeout", f("hang")), minTime: 400 * time.Millisecond, maxTime: def},
		{name: "stream/slow-first-token", first: f("slow-first-token"), stream: true, attempts: over("timeout", f("slow-first-token")), minTime: 400 * time.Millisecond, maxTime: 1900 * time.Millisecond},
		{name: "stream/cut-before-token", first: f("cut-before-token"), stream: true, attempts: over("connection_error", f("cut-before-token")), maxTime: def},
		{name: "stream/malformed-first", first: f("malformed-first"), stream: true, attempts: over("server_error", f("malformed-first")), maxTime: def},
		{name: "stream/error-event-before-token", first: f("stream-error"), stream: true, attempts: over("server_error", f("stream-error")), maxTime: def},
		{name: "stream/with-usage-after-failover", first: f("error-500"), stream: true, usage: true, attempts: over("server_error", f("error-500")), maxTime: def},

		// Streaming: after the first token the model is locked in; a break is the surface's error event.
		{name: "stream/cut-after-token", first: f("cut"), stream: true, attempts: stays(f("cut")), truncated: true, maxTime: def},
		{name: "stream/malformed-after-token", first: f("malformed"), stream: true, attempts: stays(f("malformed")), truncated: true, maxTime: def},
		{name: "stream/stall-after-tokens", first: f("stall"), stream: true, attempts: stays(f("stall")), truncated: true, streamCode: "stream_stalled", minTime: 900 * time.Millisecond, maxTime: def},

		// Streaming: a missing terminator is finished promptly — long before any timeout.
		{name: "stream/no-done", first: f("no-done"), stream: true, redundancy: patient, attempts: stays(f("no-done")), maxTime: 5 * time.Second},
		{name: "stream/no-done+usage", first: f("no-done"), stream: true, redundancy: patient, usage: true, attempts: stays(f("no-done")), maxTime: 5 * time.Second},
		{name: "stream/no-done-hold", first: f("no-done-hold"), stream: true, redundancy: patient, attempts: stays(f("no-done-hold")), maxTime: 5 * time.Second},
		{name: "stream/no-done-hold+usage", first: f("no-done-hold"), stream: true, redundancy: patient, usage: true, attempts: stays(f("no-done-hold")), maxTime: 5 * time.Second},
		{name: "stream/tools", first: f("tools"), stream: true, attempts: stays(f("tools")), maxTime: def},

		// Final provider errors: the provider's 400, the attempts so far, never a failover.
		{name: "stream/context-length", first: f("context-length"), stream: true, fails: rejected, code: "context_length_exceeded", attempts: final(f("context-length")), maxTime: def},
		{name: "stream/content-filter", first: f("content-filter"), stream: true, fails: rejected, code: "content_filter", attempts: final(f("content-filter")), maxTime: def},

		// The whole chain fails: one error in the surface's envelope, telling the client whether to retry.
		{name: "plain/exhausted", first: f("error-500"), second: f("reset"), fails: exhausted,
			attempts: []attempt{failed(f("error-500"), "server_error"), failed(f("reset"), "connection_error")}, maxTime: def},
		{name: "stream/exhausted", first: f("error-500"), second: f("reset"), stream: true, fails: exhausted,
			attempts: []attempt{failed(f("error-500"), "server_error"), failed(f("reset"), "connection_error")}, maxTime: def},
		{name: "plain/all-rate-limited-retry-after", first: f("error-429"), second: f("error-429-retry-after"), fails: rateLimited, retryAfter: true,
			attempts: []attempt{failed(f("error-429"), "rate_limit"), failed(f("error-429-retry-after"), "rate_limit")}, maxTime: 1900 * time.Millisecond},
		{name: "stream/all-rate-limited-retry-after", first: f("error-429"), second: f("error-429-retry-after"), stream: true, fails: rateLimited, retryAfter: true,
			attempts: []attempt{failed(f("error-429"), "rate_limit"), failed(f("error-429-retry-after"), "rate_limit")}, maxTime: 1900 * time.Millisecond},
		{name: "plain/all-rate-limited", first: f("error-429"), second: f("error-429-b"), fails: rateLimited,
			attempts: []attempt{failed(f("error-429"), "rate_limit"), failed(f("error-429-b"), "rate_limit")}, maxTime: def},
		{name: "stream/all-rate-limited", first: f("error-429"), second: f("error-429-b"), stream: true, fails: rateLimited,
			attempts: []attempt{failed(f("error-429"), "rate_limit"), failed(f("error-429-b"), "rate_limit")}, maxTime: def},

		// An Anthropic-wire provider: passed through on /v1/messages, translated elsewhere.
		{name: "plain/anthropic", first: anth(anthOK), attempts: stays(anth(anthOK)), maxTime: def},
		{name: "stream/anthropic", first: anth(anthOK), stream: true, attempts: stays(anth(anthOK)), maxTime: def},
		{name: "stream/anthropic-thinking", first: anth(anthThinking), stream: true, attempts: stays(anth(anthThinking)), maxTime: def},
		{name: "plain/anthropic-529", first: anth(anthOverloaded), attempts: over("server_error", anth(anthOverloaded)), maxTime: def},
		{name: "stream/anthropic-529", first: anth(anthOverloaded), stream: true, attempts: over("server_error", anth(anthOverloaded)), maxTime: def},
		{name: "stream/anthropic-error-event-before-content", first: anth(anthEventBefore), stream: true,
			attempts: over("server_error", anth(anthEventBefore)), maxTime: def},
		{name: "stream/anthropic-error-event-after-content", first: anth(anthEventAfter), stream: true,
			attempts: stays(anth(anthEventAfter)), truncated: true, maxTime: def},
		{name: "stream/anthropic-stall-after-content", first: anth(anthStall), stream: true, attempts: stays(anth(anthStall)), truncated: true, streamCode: "stream_stalled",
			minTime: 900 * time.Millisecond, maxTime: def},
		{name: "stream/anthropic-eof-after-content", first: anth(anthEOF), stream: true, attempts: stays(anth(anthEOF)), truncated: true, maxTime: def},
		{name: "stream/anthropic-stop-hold", first: anth(anthHold), stream: true, redundancy: patient, attempts: stays(anth(anthHold)), maxTime: 5 * time.Second},
		// message_start and ping are no content: the first-token timeout still runs.
		{name: "plain/anthropic-slow", first: anth(anthSlow), attempts: over("timeout", anth(anthSlow)), minTime: 900 * time.Millisecond, maxTime: def},
		{name: "stream/anthropic-slow-first-token", first: anth(anthSlow), stream: true, attempts: over("timeout", anth(anthSlow)),
			minTime: 400 * time.Millisecond, maxTime: 1900 * time.Millisecond},

		// A Responses-wire provider: passed through on /v1/responses, its Chat Completions API elsewhere.
		{name: "plain/responses", first: resp(respOK), attempts: stays(resp(respOK)), maxTime: def},
		{name: "stream/responses", first: resp(respOK), stream: true, attempts: stays(resp(respOK)), maxTime: def},
		{name: "plain/responses-500", first: resp(respError500), attempts: over("server_error", resp(respError500)), maxTime: def},
		{name: "stream/responses-500", first: resp(respError500), stream: true, attempts: over("server_error", resp(respError500)), maxTime: def},
		{name: "stream/responses-failed-before-content", first: resp(respFailedBefore), stream: true,
			attempts: over("server_error", resp(respFailedBefore)), maxTime: def},
		{name: "stream/responses-failed-after-content", first: resp(respFailedAfter), stream: true,
			attempts: stays(resp(respFailedAfter)), truncated: true, maxTime: def},
		// An error event (which Codex does not understand) fails over before content; after it, the
		// caller gets response.failed, never the provider's error event.
		{name: "stream/responses-error-event-before-content", first: resp(respErrorBefore), stream: true,
			attempts: over("server_error", resp(respErrorBefore)), maxTime: def},
		{name: "stream/responses-error-event-after-content", first: resp(respErrorAfter), stream: true,
			attempts: stays(resp(respErrorAfter)), truncated: true, maxTime: def},
		{name: "stream/responses-stall-after-content", first: resp(respStall), stream: true, attempts: stays(resp(respStall)), truncated: true, streamCode: "stream_stalled",
			minTime: 900 * time.Millisecond, maxTime: def},
		{name: "stream/responses-eof-after-content", first: resp(respEOF), stream: true, attempts: stays(resp(respEOF)), truncated: true, maxTime: def},
		{name: "stream/responses-completed-hold", first: resp(respHold), stream: true, redundancy: patient, attempts: stays(resp(respHold)), maxTime: 5 * time.Second},
		// response.created, in_progress, an empty message item and part are no content either.
		{name: "plain/responses-slow", first: resp(respSlow), attempts: over("timeout", resp(respSlow)), minTime: 900 * time.Millisecond, maxTime: def},
		{name: "stream/responses-slow-first-token", first: resp(respSlow), stream: true, attempts: over("timeout", resp(respSlow)),
			minTime: 400 * time.Millisecond, maxTime: 1900 * time.Millisecond},
	}
	for _, s := range surfaces {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					runFault(t, s, tc)
				})
			}
		})
	}
}

func runFault(t *testing.T, s surface, tc faultCase) {
	e := newEnv(t)
	second := cmp.Or(tc.second, next)
	r := e.post(t, nil, s.path, s.request(tc.first, second, tc.stream, cmp.Or(tc.redundancy, fast), tc.usage), bearer(e.secret))

	want := 200
	if tc.fails != succeeds {
		want = s.statuses[tc.fails]
	}
	if r.status != want {
		t.Fatalf("status %d, want %d; body %s frames %q", r.status, want, r.body, r.frames)
	}
	if r.elapsed < tc.minTime || r.elapsed > tc.maxTime {
		t.Errorf("answered after %s, want between %s and %s", r.elapsed, tc.minTime, tc.maxTime)
	}
	wantServed := ""
	if last := tc.attempts[len(tc.attempts)-1]; last.Status == "served" {
		wantServed = last.Model
	}
	failedOver := len(tc.attempts) > 1
	if second == next {
		nextCalls := e.up.Fake.Calls("ok")
		if failedOver && nextCalls != 1 {
			t.Errorf("fake/ok received %d calls, want 1", nextCalls)
		}
		if !failedOver && nextCalls != 0 {
			t.Errorf("no failover was due, yet fake/ok received %d calls", nextCalls)
		}
	}

	if tc.fails != succeeds {
		checkFailure(t, s, tc, r)
		return
	}
	if s.v1 {
		h := r.header
		for name, want := range map[string]string{"X-SecureAI-Served-Model": wantServed, "X-SecureAI-Requested-Model": tc.first,
			"X-SecureAI-Attempts": strconv.Itoa(len(tc.attempts)), "X-SecureAI-Failover": strconv.FormatBool(failedOver)} {
			if got := h.Get(name); got != want {
				t.Errorf("%s: %q, want %q", name, got, want)
			}
		}
	}
	var v view
	if tc.stream {
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("Content-Type %q, want text/event-stream; body %s", ct, r.body)
		}
		if len(r.frames) == 0 {
			t.Fatal("nothing streamed")
		}
		v = s.stream(r)
	} else {
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("Content-Type %q, want application/json", ct)
		}
		v = s.plain(r)
	}
	for _, p := range v.problems {
		t.Errorf("%s", p)
	}
	if v.model != wantServed {
		t.Errorf("model %q, want the served model %q", v.model, wantServed)
	}
	sec := v.report
	if got := sec.Get("served_model").String(); got != wantServed {
		t.Errorf("report's served_model %q, want %q (report %s)", got, wantServed, sec.Raw)
	}
	if got := sec.Get("requested_model").String(); got != tc.first {
		t.Errorf("report's requested_model %q, want %q", got, tc.first)
	}
	// The chain has two models, so the report is always there, even when the first served.
	if got := sec.Get("failover.occurred"); !got.Exists() || got.Bool() != failedOver {
		t.Errorf("report's failover.occurred = %s, want %v (report %s)", got.Raw, failedOver, sec.Raw)
	}
	if got := attemptsOf(sec.Get("failover.attempts")); !equalAttempts(got, tc.attempts) {
		t.Errorf("report's failover.attempts %+v, want %+v", got, tc.attempts)
	}
	defer func() {
		if t.Failed() {
			t.Logf("answer: %s\nframes:\n%s", r.body, strings.Join(r.frames, "\n"))
		}
	}()

	if tc.truncated {
		if !v.failure.Exists() {
			t.Fatalf("a stream broken after its first token must end with the surface's error event")
		}
		if v.whole || v.finish != "" {
			t.Errorf("a broken stream looks finished (terminator %v, finish %q)", v.whole, v.finish)
		}
		if c := v.text; c == "" || c == openaifake.Answer || !strings.HasPrefix(openaifake.Answer, c) {
			t.Errorf("content before the break %q: want a non-empty proper prefix of the answer", c)
		}
		if code := v.failure.Get("code"); tc.streamCode != "" && (s.name == "chat" || s.name == "classic") && code.String() != tc.streamCode {
			t.Errorf("error frame code %q, want %q", code, tc.streamCode)
		}
		return
	}
	if tc.stream {
		if v.failure.Exists() {
			t.Fatalf("unexpected error event %s", v.failure.Raw)
		}
		if !v.whole {
			t.Fatalf("the stream did not end with the surface's terminator")
		}
	}
	switch wantUsage := !tc.stream || !s.optionalUsage || tc.usage; {
	case wantUsage && !v.usage:
		t.Errorf("no usage reported")
	case !wantUsage && v.usage:
		t.Errorf("usage not asked, yet reported")
	}
	if tc.first == "fake/tools" {
		if v.tool != toolCall || v.finish != "tool_calls" {
			t.Errorf("tool call %q finish %q, want %s and tool_calls", v.tool, v.finish, toolCall)
		}
		return
	}
	if v.text != openaifake.Answer || v.finish != "stop" {
		t.Errorf("content %q finish %q, want the full answer and stop", v.text, v.finish)
	}
}

// checkFailure checks an error answered before any byte: plain JSON in the surface's envelope,
// streaming or not, with the attempts and what the client should do next.
func checkFailure(t *testing.T, s surface, tc faultCase, r *result) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	f := s.failure(r)
	for _, p := range f.problems {
		t.Errorf("%s", p)
	}
	if want := s.errorType(tc.fails, tc.code); f.errorType != want {
		t.Errorf("error %q, want %q (body %s)", f.errorType, want, r.body)
	}
	if got := attemptsOf(f.attempts); !equalAttempts(got, tc.attempts) {
		t.Errorf("attempts %+v, want %+v", got, tc.attempts)
	}
	if tc.fails != rejected && !strings.HasPrefix(f.message, "All 2 model attempt(s) failed") {
		t.Errorf("message %q, want it to say all 2 attempts failed", f.message)
	}
	wantRetryAfter, wantShouldRetry := "", "false"
	if tc.retryAfter {
		wantRetryAfter, wantShouldRetry = "2", "true"
	}
	if got := r.header.Get("Retry-After"); got != wantRetryAfter {
		t.Errorf("Retry-After %q, want %q", got, wantRetryAfter)
	}
	if got := r.header.Get("X-Should-Retry"); s.v1 && got != wantShouldRetry {
		t.Errorf("x-should-retry %q, want %q", got, wantShouldRetry)
	}
}
