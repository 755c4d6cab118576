// Command bench measures what the gateway costs over calling a zero-delay fake OpenAI upstream
// directly, both on loopback HTTP.
//
// By default it measures what users run (make run): it builds cmd/gateway and runs it as its own
// process with the embedded bbolt store in a directory on disk and every feature on (limits,
// billing, receipts, events, audit, access log; the demo provider at its default), the fake
// upstream added by a SECUREAI_CONFIG catalog overlay. Keys are made through the admin API, so
// many that no limit or points allowance is reached. At each concurrency (-c) it sends plain,
// streamed and failover requests (a chain whose first model answers 500), then plain and streamed
// requests on the Anthropic Messages and OpenAI Responses surfaces, in rounds alternating direct
// and gateway, and reports p50/p99 of each and what the gateway adds, throughput, the
// gateway process's CPU per request, its resident memory after each of -reps whole loads and
// after a settle pause, the store's growth per served request, the agent surfaces beside chat
// (added latency and CPU per request over chat's), and a verdict against the targets.
// At concurrency 1 it also measures the floor: the same plain requests through a bare Go reverse
// proxy (this binary run again as one), so what the machine costs any proxy shows beside what the
// gateway adds.
//
// With -micro it runs the older micro-benchmark instead: the gateway in this process
// (localserver.NewGateway, an in-memory key finder, no store), with allocations and CPU per request and the
// live heap of long streams.
//
// With -cloud it runs the cloud-path benchmark instead (internal/bench/cloudbench): the built
// functions/openai-chat Lambda under the Runtime Interface Emulator against moto, with a proxy in
// front of moto that holds every AWS call for each delay of -cloud-delays and records it. It
// reports latency p50 warm and cold, plain and streamed (and failover), the slope (the sequential
// AWS round trips on the path), one request's call order, the sequential rounds before the first
// upstream attempt and after the provider answered, the calls per request by operation, and a
// verdict against issue 17's targets. Quick run: go run ./cmd/bench -cloud
//
// With -hedge it runs the hedging benchmark instead (issue 23): a fake provider whose time to
// first token is heavy-tailed (-hedge-fast for most requests, -hedge-slow for -hedge-share of
// them), -hedge-n streamed requests through the in-process gateway with no failover, with
// sequential failover after a first-token timeout, and hedged; it reports p50/p99 time to first
// token and attempts per request. Quick run: go run ./cmd/bench -hedge
//
// Last (unless -bodies is empty) it runs the local server as its own process under 100
// concurrent 7 MB requests and reports its peak resident memory. Run it with make bench;
// docs/benchmarks.md records its figures.
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

	"github.com/secureai-gateway/gateway/internal/bench/cloudbench"
	"github.com/secureai-gateway/gateway/internal/bench/latencybench"
)

func main() {
	if up := os.Getenv(latencybench.FloorEnv); up != "" {
		// The process benchmark runs this binary again as its floor proxy.
		fail(latencybench.ServeFloor(os.Getenv("PORT"), up))
	}
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), `Usage: go run ./cmd/bench [flags]

Default: the gateway as users run it (cmd/gateway as its own process, embedded store on disk,
every feature on) against a zero-delay fake upstream; plain, stream and failover requests, and
plain and stream on the Messages and Responses surfaces, at each -c, -reps times; latency,
throughput, gateway CPU per request, RSS, store growth, the surfaces beside chat, verdict.
-micro: the in-process micro-benchmark instead (localserver.NewGateway in this process, no store).
Then, unless -bodies is empty: peak RSS of the local server under large concurrent bodies.
Quick run: go run ./cmd/bench -n 2000 -warmup 200 -settle 3s
-cloud: only the cloud path (none of the above): functions/openai-chat under the Lambda
emulator against moto behind a per-call delay proxy (-cloud-delays); latency, slope =
sequential AWS round trips, call order and rounds before/after the first upstream attempt,
calls per operation, verdict.
Quick run: go run ./cmd/bench -cloud

Flags:
`)
		flag.PrintDefaults()
	}
	n := flag.Int("n", 10000, "measured requests per target, mode and concurrency")
	warmup := flag.Int("warmup", 500, "warm-up requests per target before each measurement")
	rounds := flag.Int("rounds", 4, "rounds alternating direct and gateway")
	conc := flag.String("c", "", "comma-separated concurrency levels (default 1,8,32; with -micro 1,32)")
	micro := flag.Bool("micro", false, "run the in-process micro-benchmark (no store, no process) instead of the gateway process")
	reps := flag.Int("reps", 2, "process benchmark: run the whole load this many times, so memory or store growth shows")
	settle := flag.Duration("settle", 10*time.Second, "process benchmark: pause after each load before the gateway's RSS and store are read again")
	dir := flag.String("dir", os.TempDir(), "process benchmark: where the run's directory (gateway binary, store, access log) is made; must be on disk, not tmpfs")
	keep := flag.Bool("keep", false, "process benchmark: keep the run's directory afterwards")
	long := flag.String("long", "1000,10000,100000", "-micro: comma-separated content chunks of the long streams (empty: skip)")
	cpuprofile := flag.String("cpuprofile", "", "-micro: write a CPU profile of the measurements to this file")
	memprofile := flag.String("memprofile", "", "-micro: write an allocation profile to this file at the end")
	withLimits := flag.Bool("limits", true, "-micro: also measure with request limits on (the local server's in-memory counters)")
	latency := flag.Bool("latency", true, "measure latency (false: only the large-body memory run)")
	bodies := flag.String("bodies", "100x7000000", "concurrent requests x body bytes sent to the local server process, whose peak RSS is measured (empty: skip)")
	bodyEnv := flag.String("bodies-env", "", "space-separated NAME=VALUE settings for that server, e.g. SECUREAI_MAX_INFLIGHT_BODY_BYTES=134217728")
	cloud := flag.Bool("cloud", false, "run the cloud-path benchmark (the built openai-chat Lambda under the emulator against moto behind a delay proxy) instead")
	cloudDelays := flag.String("cloud-delays", "0,10ms", "-cloud: comma-separated delays injected before every AWS call (at least two, for the slope)")
	cloudWarm := flag.Int("cloud-n", 40, "-cloud: measured warm invocations per delay and mode")
	cloudCold := flag.Int("cloud-cold", 3, "-cloud: cold samples (a fresh emulator each) per delay and mode")
	cloudFailover := flag.Bool("cloud-failover", true, "-cloud: also measure a failover chain (first model's upstream answers 500)")
	hedge := flag.Bool("hedge", false, "run the hedging benchmark (heavy-tailed provider; no failover, sequential, hedged) instead")
	hedgeN := flag.Int("hedge-n", 1000, "-hedge: streamed requests per mode")
	hedgeC := flag.Int("hedge-c", 50, "-hedge: concurrent requests")
	hedgeFast := flag.Duration("hedge-fast", 200*time.Millisecond, "-hedge: the provider's usual time to first token")
	hedgeSlow := flag.Duration("hedge-slow", 5*time.Second, "-hedge: the provider's slow time to first token")
	hedgeShare := flag.Float64("hedge-share", 0.10, "-hedge: the share of requests that are slow")
	hedgeFTT := flag.Duration("hedge-first-token-timeout", 500*time.Millisecond, "-hedge: the sequential mode's first_token_timeout_ms on the first model")
	hedgeAfter := flag.Duration("hedge-after", 300*time.Millisecond, "-hedge: the hedged mode's hedge_after_ms")
	flag.Parse()

	if *hedge {
		printMachine()
		cfg := latencybench.HedgeConfig{Requests: *hedgeN, Concurrency: *hedgeC, Fast: *hedgeFast, Slow: *hedgeSlow, SlowShare: *hedgeShare,
			FirstTokenTimeout: *hedgeFTT, HedgeAfter: *hedgeAfter}
		if cfg.Requests <= 0 || cfg.Concurrency <= 0 {
			fail(fmt.Errorf("-hedge-n %d, -hedge-c %d: both must be positive", cfg.Requests, cfg.Concurrency))
		}
		fmt.Printf("Hedging benchmark: %d streamed requests per mode at concurrency %d; first token after %s, or %s for %.0f%% of requests\n",
			cfg.Requests, cfg.Concurrency, cfg.Fast, cfg.Slow, 100*cfg.SlowShare)
		rows, err := latencybench.RunHedge(context.Background(), cfg, os.Stdout)
		if err != nil {
			fail(err)
		}
		latencybench.ReportHedge(os.Stdout, cfg, rows)
		return
	}

	if *cloud {
		printMachine()
		delays, err := cloudbench.ParseDelays(*cloudDelays)
		if err != nil || *cloudWarm <= 0 || *cloudCold <= 0 {
			fail(fmt.Errorf("-cloud-delays %q, -cloud-n %d, -cloud-cold %d: %v", *cloudDelays, *cloudWarm, *cloudCold, err))
		}
		cfg := cloudbench.Config{Delays: delays, Warm: *cloudWarm, Cold: *cloudCold, Failover: *cloudFailover}
		if _, err := cloudbench.Bench(context.Background(), os.Stdout, cfg); err != nil {
			fail(err)
		}
		return
	}

	if *bodies != "" {
		defer measureBodies(*bodies, strings.Fields(*bodyEnv))()
	}
	if !*latency {
		return
	}
	cfg := latencybench.Config{Requests: *n, Warmup: *warmup, Rounds: *rounds}
	var err error
	if *conc == "" {
		*conc = "1,8,32"
		if *micro {
			*conc = "1,32"
		}
	}
	if cfg.Concurrency, err = ints(*conc); err != nil || len(cfg.Concurrency) == 0 {
		fail(fmt.Errorf("-c: %v", err))
	}
	printMachine()
	if !*micro {
		if *cpuprofile != "" || *memprofile != "" {
			fail(fmt.Errorf("-cpuprofile and -memprofile profile this process, so only the in-process gateway of -micro; " +
				"the gateway process has no pprof endpoint: profile it from outside (its pid is printed), e.g. with perf"))
		}
		processBench(latencybench.ProcessConfig{Config: cfg, Reps: *reps, Settle: *settle, Dir: *dir, Keep: *keep})
		return
	}
	if cfg.LongStreams, err = ints(*long); err != nil {
		fail(fmt.Errorf("-long: %v", err))
	}
	microBench(cfg, *cpuprofile, *memprofile, *withLimits)
}

func printMachine() {
	fmt.Printf("SecureAI Gateway benchmark: %s %s/%s, GOMAXPROCS=%d, NumCPU=%d\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU())
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("load average before the run: %s", la) // the client, gateway and upstream share these cores with it
	}
}

// processBench measures the gateway process and prints its tables and verdict.
func processBench(cfg latencybench.ProcessConfig) {
	fmt.Printf("Process benchmark (what make run runs): %d requests x %d rounds per cell, %d warm-up, concurrency %v, modes %v, %d repetitions, settle %s\n\n",
		cfg.Requests, cfg.Rounds, cfg.Warmup, cfg.Concurrency, latencybench.ProcessModes, cfg.Reps, cfg.Settle)
	start := time.Now()
	run, err := latencybench.RunProcess(context.Background(), cfg, os.Stdout)
	if err != nil {
		fail(err)
	}
	verdict := "every measured target met"
	if !latencybench.ReportProcess(os.Stdout, run) {
		verdict = "targets NOT met (see above)"
	}
	fmt.Printf("\nProcess benchmark: %s. Took %s.\n", verdict, time.Since(start).Round(time.Second))
}

// microBench is the in-process micro-benchmark: the gateway built in this process with no store.
func microBench(cfg latencybench.Config, cpuprofile, memprofile string, withLimits bool) {
	if memprofile != "" {
		runtime.MemProfileRate = 4096
	}
	env, err := latencybench.Start(latencybench.Options{})
	if err != nil {
		fail(err)
	}
	defer env.Close()
	fmt.Printf("MICRO-BENCHMARK (in-process gateway, in-memory keys, no store; not what make run runs)\n")
	fmt.Printf("upstream %s, gateway %s; %d requests x %d rounds per cell, %d warm-up\n\n", env.UpstreamURL, env.GatewayURL, cfg.Requests, cfg.Rounds, cfg.Warmup)

	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
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
	if memprofile != "" {
		f, err := os.Create(memprofile)
		if err != nil {
			fail(err)
		}
		_ = pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
	if withLimits {
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
	fmt.Printf("\nMicro-benchmark targets (p50 added < 200µs, p99 added < 2ms): %s. Took %s.\n", verdict, time.Since(start).Round(time.Second))
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
