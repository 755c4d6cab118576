package latencybench

import (
	"strings"
	"testing"
	"time"
)

func TestChecks(t *testing.T) {
	const ms, us = time.Millisecond, time.Microsecond
	cell := func(conc int, added, gwWall, cpu time.Duration) Row {
		return Row{Mode: "plain", Conc: conc,
			Direct:  Run{Latency: []time.Duration{ms}, Wall: 10 * ms},
			Gateway: Run{Latency: []time.Duration{ms + added}, Wall: gwWall, ServerCPU: cpu}}
	}
	floor := cell(1, 150*us, 10*ms, 50*us)
	floor.Mode = "floor"
	run := &ProcessRun{Config: ProcessConfig{Config: Config{Concurrency: []int{1, 32}}}, Reps: []Rep{
		{Rows: []Row{cell(1, 100*us, 10*ms, 100*us), cell(32, ms, 40*ms, 200*us), floor},
			Served: 1000, RSSAfter: 30 << 20, Before: StoreSize{File: 1 << 20}, After: StoreSize{File: 2 << 20}},
		{Rows: []Row{cell(1, 400*us, 10*ms, 100*us), cell(32, ms, 40*ms, 100*us)},
			Served: 1000, RSSAfter: 36 << 20, FileAfter: 20 << 20, After: StoreSize{File: 3 << 20}},
	}}
	checks := run.Checks()
	for _, want := range []struct {
		prefix string
		met    bool
	}{
		{"added p50", true},          // the reps' samples together: 100 and 400 µs, p50 100 µs
		{"gateway throughput", true}, // 20 of 80 ms over the two reps: 25 % of direct
		{"gateway CPU", true},        // worst cell c=32: (200+100)/2 = 150 µs, on the bound
		{"gateway RSS", true},        // 36 MiB at most
		{"RSS growth", false},        // 30 → 36 MiB is +20 %
		{"store growth", true},       // 2 MiB over 2000 requests: 1049 B each
	} {
		var c *Check
		for i := range checks {
			if strings.HasPrefix(checks[i].What, want.prefix) {
				c = &checks[i]
			}
		}
		if c == nil || !c.Measured || c.Met != want.met {
			t.Errorf("%s: %+v, want measured and met=%v", want.prefix, c, want.met)
		}
	}
	// The floor is reported beside the target it explains, and RSS beside its anonymous part
	// (the highest load's: 36 MiB, 20 of them file-backed).
	for prefix, want := range map[string]string{"added p50": "100.0 µs (a bare Go proxy: 150.0 µs)", "gateway RSS": "36.0 MiB (anonymous 16.0 MiB)"} {
		got := "no such check"
		for _, c := range checks {
			if strings.HasPrefix(c.What, prefix) {
				got = c.Got
			}
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", prefix, got, want)
		}
	}

	one := &ProcessRun{Config: ProcessConfig{Config: Config{Concurrency: []int{8}}},
		Reps: []Rep{{Rows: []Row{cell(8, ms, 10*ms, 100*us)}, Served: 10, RSSAfter: 30 << 20}}}
	for _, c := range one.Checks() {
		if measurable := strings.HasPrefix(c.What, "gateway CPU") || strings.HasPrefix(c.What, "gateway RSS") || strings.HasPrefix(c.What, "store"); c.Measured != measurable {
			t.Errorf("one rep at c=8: %q measured=%v, want %v", c.What, c.Measured, measurable)
		}
	}
}
