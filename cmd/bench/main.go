// Command bench measures the latency the gateway adds over a direct call to a zero-delay fake
// upstream, both on loopback HTTP: p50/p90/p99 at each concurrency, time to first byte of
// streams, allocations and CPU per request, and the live heap of long streams. Last it runs the
// local server as its own process under 100 concurrent 7 MB requests and reports its peak
// resident memory. Run it with make bench; docs/benchmarks.md records its figures.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/latencybench"
)

func main() {
	n := flag.Int("n", 10000, "measured requests per target, mode and concurrency")
	warmup := flag.Int("warmup", 500, "warm-up requests per target before each measurement")
	rounds := flag.Int("rounds", 4, "rounds alternating direct and gateway")
	conc := flag.String("c", "1,32", "comma-separated concurrency levels")
	long := flag.String("long", "1000,10000,100000", "comma-separated content chunks of the long streams (empty: skip)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the measurements to this file")
	memprofile := flag.String("memprofile", "", "write an allocation profile to this file at the end")
	latency := flag.Bool("latency", true, "measure latency (false: only the large-body memory run)")
	withLimits := flag.Bool("limits", true, "also measure with request limits on (the local server's in-memory counters)")
	bodies := flag.String("bodies", "100x7000000", "concurrent requests x body bytes sent to the local server process, whose peak RSS is measured (empty: skip)")
	bodyEnv := flag.String("bodies-env", "", "space-separated NAME=VALUE settings for that server, e.g. SECUREAI_MAX_INFLIGHT_BODY_BYTES=134217728")
	flag.Parse()

	if *bodies != "" {
		defer measureBodies(*bodies, strings.Fields(*bodyEnv))()
	}
	if !*latency {
		return
	}

	cfg := latencybench.Config{Requests: *n, Warmup: *warmup, Rounds: *rounds}
	var err error
	if cfg.Concurrency, err = ints(*conc); err != nil || len(cfg.Concurrency) == 0 {
		fail(fmt.Errorf("-c: %v", err))
	}
	if cfg.LongStreams, err = ints(*long); err != nil {
		fail(fmt.Errorf("-long: %v", err))
	}
	if *memprofile != "" {
		runtime.MemProfileRate = 4096
	}

	env, err := latencybench.Start(latencybench.Options{})
	if err != nil {
		fail(err)
	}
	defer env.Close()
	fmt.Printf("SecureAI Gateway latency benchmark: %s %s/%s, GOMAXPROCS=%d, NumCPU=%d\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU())
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("load average before the run: %s", la) // the client, gateway and upstream share these cores with it
	}
	fmt.Printf("upstream %s, gateway %s; %d requests x %d rounds per cell, %d warm-up\n\n", env.UpstreamURL, env.GatewayURL, *n, *rounds, *warmup)

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	rows, err := latencybench.Measure(env, cfg, os.Stdout)
	if err != nil {
		fail(err)
	}
	met := latencybench.Report(os.Stdout, rows)

	var heap []latencybench.HeapRun
	for _, chunks := range cfg.LongStreams {
		r, err := latencybench.LongStream(env, chunks)
		if err != nil {
			fail(err)
		}
		heap = append(heap, r)
	}
	if len(heap) > 0 {
		latencybench.ReportHeap(os.Stdout, heap)
	}
	if *memprofile != "" {
		f, err := os.Create(*memprofile)
		if err != nil {
			fail(err)
		}
		_ = pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
	if *withLimits {
		limited, err := latencybench.Start(latencybench.Options{Limits: true})
		if err != nil {
			fail(err)
		}
		fmt.Printf("\nWith request limits on (every request counted in four windows, in memory):\n")
		rows, err := latencybench.Measure(limited, cfg, os.Stdout)
		if err != nil {
			fail(err)
		}
		latencybench.Report(os.Stdout, rows)
		limited.Close()
	}
	verdict := "met"
	if !met {
		verdict = "NOT met (see the table)"
	}
	fmt.Printf("\nTargets (p50 added < 200µs, p99 added < 2ms): %s. Took %s.\n", verdict, time.Since(start).Round(time.Second))
}

// measureBodies parses "NxSIZE" at once (a typo fails before the latency run) and returns the
// run, made last so the latency figures are not taken beside a server process full of bodies.
func measureBodies(spec string, env []string) func() {
	n, size, ok := strings.Cut(spec, "x")
	requests, err1 := strconv.Atoi(n)
	bytes, err2 := strconv.Atoi(size)
	if !ok || err1 != nil || err2 != nil || requests <= 0 || bytes <= 0 {
		fail(fmt.Errorf("-bodies: want REQUESTSxBYTES such as 100x7000000, got %q", spec))
	}
	return func() {
		cfg := latencybench.BodyMemConfig{Requests: requests, Size: bytes, Env: env}
		r, err := latencybench.BodyMemory(context.Background(), cfg)
		if err != nil {
			fail(err)
		}
		latencybench.ReportBodyMemory(os.Stdout, []latencybench.BodyMemRun{r})
		verdict := "met"
		if r.PeakRSS >= latencybench.TargetBodyPeakRSS {
			verdict = "NOT met"
		}
		fmt.Printf("\nTarget (peak RSS < %d MB): %s.\n", latencybench.TargetBodyPeakRSS>>20, verdict)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("want positive integers, got %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
