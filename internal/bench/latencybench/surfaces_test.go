package latencybench

import (
	"strings"
	"testing"
	"time"
)

// The agent surfaces' targets are requests the gateway serves, and their streams have the
// frames and the last event the benchmark expects of them (a small run through the in-process
// gateway, which routes the surfaces as the process does).
func TestSurfaceTargetsAreServed(t *testing.T) {
	env, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	_, gw := env.Targets()
	messages, responses := Surfaces(gw, strings.TrimSuffix(env.GatewayURL, "/v1/chat/completions"))
	client := NewClient(2)
	defer client.CloseIdleConnections()
	for _, target := range []Target{messages, responses} {
		for _, stream := range []bool{false, true} {
			run, err := Load(client, target, stream, 2, 6)
			if err != nil {
				t.Fatalf("%s, stream %v: %v", target.Name, stream, err)
			}
			if len(run.Latency) != 6 {
				t.Errorf("%s, stream %v: %d requests measured", target.Name, stream, len(run.Latency))
			}
		}
	}
}

func TestModesOfTheAgentSurfacesCompareWithChat(t *testing.T) {
	for mode, want := range map[string]struct {
		chat     string
		streamed bool
	}{
		"plain": {"", false}, "stream": {"", true}, "failover": {"", false},
		"messages": {"plain", false}, "messages stream": {"stream", true}, "responses": {"plain", false}, "responses stream": {"stream", true},
	} {
		if chatMode(mode) != want.chat || streamed(mode) != want.streamed {
			t.Errorf("%s: chat mode %q, streamed %v; want %q, %v", mode, chatMode(mode), streamed(mode), want.chat, want.streamed)
		}
	}
}

// An agent surface is judged against chat by added p50 at c=1 and CPU per request at the highest
// concurrency, plain and streamed together: each within 10 % of its chat mode's.
func TestSurfaceChecks(t *testing.T) {
	const ms, us = time.Millisecond, time.Microsecond
	cell := func(mode string, conc int, added, cpu time.Duration) Row {
		return Row{Mode: mode, Conc: conc,
			Direct:  Run{Latency: []time.Duration{ms}, Wall: 10 * ms},
			Gateway: Run{Latency: []time.Duration{ms + added}, Wall: 10 * ms, ServerCPU: cpu}}
	}
	run := &ProcessRun{Config: ProcessConfig{Config: Config{Concurrency: []int{1, 32}}}, Reps: []Rep{{Rows: []Row{
		cell("plain", 1, 200*us, 100*us), cell("stream", 1, 300*us, 150*us),
		cell("plain", 32, ms, 100*us), cell("stream", 32, ms, 150*us),
		cell("messages", 1, 210*us, 0), cell("messages stream", 1, 320*us, 0), // +5 %, +6.7 %
		cell("messages", 32, ms, 109*us), cell("messages stream", 32, ms, 170*us), // +9 %, +13.3 %
		cell("responses", 1, 250*us, 0), cell("responses stream", 1, 300*us, 0), // +25 %, 0 %
		cell("responses", 32, ms, 100*us), cell("responses stream", 32, ms, 150*us),
	}}}}
	got := map[string]Check{}
	for _, c := range run.Checks() {
		got[c.What] = c
	}
	for what, met := range map[string]bool{
		"messages vs chat: added p50, sequential":           true,
		"messages vs chat: gateway CPU per request (c=32)":  false,
		"responses vs chat: added p50, sequential":          false,
		"responses vs chat: gateway CPU per request (c=32)": true,
	} {
		c, ok := got[what]
		if !ok || !c.Measured || c.Met != met {
			t.Errorf("%s: %+v, want measured and met=%v", what, c, met)
		}
	}
	if c := got["messages vs chat: gateway CPU per request (c=32)"]; c.Got != "plain 109.0 vs 100.0 µs (+9.0 %), stream 170.0 vs 150.0 µs (+13.3 %)" {
		t.Errorf("got %q", c.Got)
	}
}
