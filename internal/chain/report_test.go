package chain_test

import (
	"encoding/json"
	"testing"

	"github.com/secureai-gateway/gateway/internal/fault"

	"github.com/secureai-gateway/gateway/internal/chain"
)

func TestExhausted_Status(t *testing.T) {
	tests := []struct {
		name     string
		attempts []chain.Attempt
		want     int
	}{
		{"3.7 429 when every failure was rate_limit", []chain.Attempt{failed("a", chain.RateLimit), failed("b", chain.RateLimit), failed("c", chain.RateLimit)}, 429},
		{"3.7 429 for a single rate_limit", []chain.Attempt{failed("a", chain.RateLimit)}, 429},
		{"3.7 502 when one failure was not rate_limit (last)", []chain.Attempt{failed("a", chain.RateLimit), failed("b", chain.RateLimit), failed("c", chain.ServerError)}, 502},
		{"3.7 502 when one failure was not rate_limit (first)", []chain.Attempt{failed("a", chain.Timeout), failed("b", chain.RateLimit)}, 502},
		{"3.7 502 for server_error", []chain.Attempt{failed("a", chain.ServerError)}, 502},
		{"3.7 502 for connection_error", []chain.Attempt{failed("a", chain.ConnectionError)}, 502},
		{"3.7 502 for timeout", []chain.Attempt{failed("a", chain.Timeout)}, 502},
		{"3.7 502 when no attempt was made", nil, 502},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ex := &chain.Exhausted{Attempts: tc.attempts}
			want := fault.ChainExhausted
			if tc.want == 429 {
				want = fault.ChainRateLimited
			}
			if got := ex.Fault().K; got != want {
				t.Fatalf("kind = %v, want %v (HTTP %d)", got, want, tc.want)
			}
		})
	}
}

func TestExhausted_Message(t *testing.T) {
	three := []chain.Attempt{failed("openai/gpt-5-nano", chain.Timeout), failed("anthropic/claude-sonnet-4", chain.RateLimit), failed("google/gemini-2.5-flash", chain.ServerError)}
	tests := []struct {
		name     string
		attempts []chain.Attempt
		cause    chain.StopCause
		want     string
	}{
		{"3.7 end of chain, exact contract message", three, chain.EndOfChain,
			"All 3 model attempt(s) failed (last: google/gemini-2.5-flash — server_error)"},
		{"3.3 reason not in on", three[:1], chain.NotTriggered,
			"All 1 model attempt(s) failed (last: openai/gpt-5-nano — timeout); timeout does not trigger failover for this request"},
		{"3.4 deadline reached", three[:2], chain.DeadlineReached,
			"All 2 model attempt(s) failed (last: anthropic/claude-sonnet-4 — rate_limit); the request deadline left no time for another attempt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ex := &chain.Exhausted{Attempts: tc.attempts, Cause: tc.cause}
			if got := ex.Error(); got != tc.want {
				t.Fatalf("Error() =\n %q\nwant\n %q", got, tc.want)
			}
		})
	}
}

func TestReport_JSONShape(t *testing.T) {
	r := chain.Report{Occurred: true, Attempts: []chain.Attempt{
		{Model: "openai/gpt-5-nano", Status: chain.Failed, Reason: chain.Timeout, LatencyMS: 30011},
		{Model: "anthropic/claude-sonnet-4", Status: chain.Served, LatencyMS: 734},
	}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"occurred":true,"attempts":[{"model":"openai/gpt-5-nano","status":"failed","reason":"timeout","latency_ms":30011},{"model":"anthropic/claude-sonnet-4","status":"served","latency_ms":734}]}`
	if string(b) != want {
		t.Fatalf("3.6 report JSON =\n %s\nwant\n %s", b, want)
	}
}

func TestReport_JSONFirstServedAndRejected(t *testing.T) {
	tests := []struct {
		name string
		r    chain.Report
		want string
	}{
		{"3.6 first model served: occurred false, latency 0 kept", chain.Report{Attempts: []chain.Attempt{{Model: "a", Status: chain.Served}}},
			`{"occurred":false,"attempts":[{"model":"a","status":"served","latency_ms":0}]}`},
		{"3.3 final failure recorded as rejected", chain.Report{Attempts: []chain.Attempt{{Model: "a", Status: chain.Failed, Reason: chain.Rejected, LatencyMS: 12}}},
			`{"occurred":false,"attempts":[{"model":"a","status":"failed","reason":"rejected","latency_ms":12}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("JSON = %s, want %s", b, tc.want)
			}
		})
	}
}

func TestReasonOf(t *testing.T) {
	if got := chain.ReasonOf(&provErr{chain.RateLimit}); got != chain.RateLimit {
		t.Errorf("ReasonOf(rate_limit error) = %q", got)
	}
	wrapped := &wrapErr{&provErr{chain.ServerError}}
	if got := chain.ReasonOf(wrapped); got != chain.ServerError {
		t.Errorf("ReasonOf(wrapped server_error) = %q, want server_error", got)
	}
	if got := chain.ReasonOf(errPlain); got != "" {
		t.Errorf("ReasonOf(plain error) = %q, want \"\" (final)", got)
	}
}

type wrapErr struct{ err error }

func (w *wrapErr) Error() string { return "wrapped: " + w.err.Error() }
func (w *wrapErr) Unwrap() error { return w.err }

var errPlain = json.Unmarshal([]byte("{"), new(any))
