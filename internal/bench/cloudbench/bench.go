package cloudbench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// ParseDelays reads the comma-separated delays of -cloud-delays ("0,10ms"): at least two
// different non-negative durations, returned sorted.
func ParseDelays(s string) ([]time.Duration, error) {
	var out []time.Duration
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("want non-negative durations such as 0,10ms, got %q", f)
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("want at least two different delays for a slope, got %q", s)
	}
	slices.Sort(out)
	return out, nil
}

// Bench measures and reports the cloud path (cmd/bench -cloud) and reports whether every
// target was met.
func Bench(ctx context.Context, w io.Writer, cfg Config) (bool, error) {
	fmt.Fprintf(w, "Cloud-path benchmark: functions/openai-chat (built as deployed, for this machine) under the Lambda Runtime Interface Emulator,\n"+
		"against moto behind a delay proxy holding every AWS call for D; zero-delay fake upstream. Delays %v, %d warm invocations per cell\n"+
		"after a warm-up, %d cold samples per cell (a fresh emulator each), failover %v. Invocations run one at a time.\n\n",
		cfg.Delays, cfg.Warm, cfg.Cold, cfg.Failover)
	start := time.Now()
	run, err := Measure(ctx, cfg, w)
	if err != nil {
		return false, err
	}
	fmt.Fprintln(w)
	met := Report(w, run)
	verdict := "every target met"
	if !met {
		verdict = "targets NOT met (see above)"
	}
	fmt.Fprintf(w, "\nCloud-path benchmark: %s. Took %s.\n", verdict, time.Since(start).Round(time.Second))
	return met, nil
}
