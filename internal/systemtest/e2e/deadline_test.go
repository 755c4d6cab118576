package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
)

// TestDeadline: a chain that needs more time than the request's budget stops honestly — no
// attempt outlives the budget, the answer comes back right after it and says why.
func TestDeadline(t *testing.T) {
	const budget = 1500 * time.Millisecond
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "stream"}[stream]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(c *envConfig) { c.budget = budget })
			start := time.Now()
			r := e.chat(t, chatBody(t, []string{"fake/hang", "fake/hang-2", "fake/hang-3"}, stream,
				map[string]any{"redundancy": raw(`{"timeout_ms":1000,"first_token_timeout_ms":1000}`)}))
			if r.status != 502 {
				t.Fatalf("status %d, want 502: %s", r.status, r.body)
			}
			if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
				t.Errorf("Content-Type %q, want application/json", r.header.Get("Content-Type"))
			}
			if r.elapsed > budget+time.Second {
				t.Errorf("answered after %s; the budget is %s", r.elapsed, budget)
			}
			j := r.json()
			if j.Get("error.code").String() != "all_models_failed" || !strings.Contains(j.Get("error.message").String(), "deadline") {
				t.Errorf("want all_models_failed naming the deadline, got %s", r.body)
			}
			tries := attemptsOf(j.Get("error.attempts"))
			if len(tries) < 1 || len(tries) > 2 {
				t.Errorf("attempts %+v: 1 s + the rest of 1.5 s leave room for two at most", tries)
			}
			for _, a := range tries {
				if a.Status != "failed" || a.Reason != "timeout" {
					t.Errorf("attempt %+v, want a failed timeout", a)
				}
			}
			if n := e.up.Fake.Calls("hang"); n != len(tries) {
				t.Errorf("upstream received %d calls for %d reported attempts", n, len(tries))
			}
			for _, c := range e.up.Calls() {
				select {
				case end := <-c.Ended:
					if over := end.Sub(start); over > budget+500*time.Millisecond {
						t.Errorf("an attempt to %s lived %s, past the %s budget", c.Model(), over, budget)
					}
				case <-time.After(3 * time.Second):
					t.Errorf("an upstream call to %s is still running after the answer", c.Model())
				}
			}
		})
	}
}

// TestClientDisconnect: a caller that goes away cancels the upstream call at once.
func TestClientDisconnect(t *testing.T) {
	patient := map[string]any{"redundancy": raw(`{"timeout_ms":60000,"first_token_timeout_ms":60000}`)}
	cases := []struct {
		name   string
		model  string
		stream bool
	}{
		{"plain-hang", "fake/hang", false},
		{"stream-hang-before-token", "fake/hang", true},
		{"stream-stall-after-token", "fake/stall", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			firstFrame := make(chan struct{})
			go func() {
				// The request fails once canceled; only the upstream side matters here.
				req := chatBody(t, []string{tc.model, "fake/ok"}, tc.stream, patient)
				_ = doQuiet(ctx, e, req, firstFrame)
			}()
			var call gatewaykit.UpstreamCall
			select {
			case call = <-e.up.Arrivals:
			case <-time.After(clientBound):
				t.Fatal("the upstream never received the call")
			}
			if tc.model == "fake/stall" {
				// Leave only once the first tokens have reached the caller.
				select {
				case <-firstFrame:
				case <-time.After(clientBound):
					t.Fatal("no frame arrived")
				}
			}
			cancel()
			select {
			case <-call.Ctx.Done():
			case <-time.After(3 * time.Second):
				t.Fatal("the upstream call was still open 3 s after the caller left")
			}
			if n := e.up.Fake.Calls("ok"); n != 0 {
				t.Errorf("a caller that left must not cause a failover; fake/ok received %d calls", n)
			}
		})
	}
}
