package latencybench

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"time"
)

// Config says what to measure.
type Config struct {
	Requests    int   // measured requests per target, mode and concurrency
	Warmup      int   // unmeasured requests per target before each measurement
	Rounds      int   // the requests are split into rounds alternating direct and gateway
	Concurrency []int // e.g. 1 and 32
	LongStreams []int // content chunks of the streams whose heap is watched
}

// Targets of issue 2 item 8, in microseconds of latency added over the direct call.
const (
	TargetP50Added = 200 * time.Microsecond
	TargetP99Added = 2 * time.Millisecond
)

// Row is one (mode, concurrency) comparison.
type Row struct {
	Mode    string // "non-stream", "stream", "stream TTFB"
	Conc    int
	Direct  Run
	Gateway Run
	TTFB    bool // compare the TTFB samples rather than the whole request
}

func (r Row) samples(run Run) []time.Duration {
	if r.TTFB {
		return run.TTFB
	}
	return run.Latency
}

// Measure runs every comparison of cfg.
func Measure(e *Env, cfg Config, log io.Writer) ([]Row, error) {
	direct, gw := e.Targets()
	var rows []Row
	for _, conc := range cfg.Concurrency {
		client := NewClient(conc)
		for _, stream := range []bool{false, true} {
			mode := "non-stream"
			if stream {
				mode = "stream"
			}
			row, err := compare(client, direct, gw, stream, conc, cfg)
			if err != nil {
				return nil, err
			}
			row.Mode = mode
			logRow(log, row)
			rows = append(rows, row)
			if stream {
				t := row
				t.Mode, t.TTFB = "stream TTFB", true
				rows = append(rows, t)
			}
		}
		client.CloseIdleConnections()
	}
	return rows, nil
}

// compare warms both targets up, then measures them in cfg.Rounds rounds that alternate which
// goes first, so drift of the machine (other load, frequency) hits both alike.
func compare(client *http.Client, direct, gw Target, stream bool, conc int, cfg Config) (Row, error) {
	row := Row{Conc: conc}
	for _, t := range []Target{direct, gw} {
		if _, err := Load(client, t, stream, conc, cfg.Warmup); err != nil {
			return row, err
		}
	}
	for round := range max(1, cfg.Rounds) {
		order := []Target{direct, gw}
		if round%2 == 1 {
			order = []Target{gw, direct}
		}
		for _, t := range order {
			run, err := Load(client, t, stream, conc, cfg.perRound())
			if err != nil {
				return row, err
			}
			if t.Name == direct.Name {
				row.Direct.Merge(run)
			} else {
				row.Gateway.Merge(run)
			}
		}
	}
	return row, nil
}

// perRound is the requests of one round of one target.
func (cfg Config) perRound() int { return max(1, cfg.Requests/max(1, cfg.Rounds)) }

// gatewayRequests is what compare sends the gateway: warm-up and every round.
func (cfg Config) gatewayRequests() int { return cfg.Warmup + max(1, cfg.Rounds)*cfg.perRound() }

// logRow notes a measured cell's throughput, to show progress.
func logRow(log io.Writer, row Row) {
	fmt.Fprintf(log, "  measured %-16s c=%-3d direct %6.0f req/s, gateway %6.0f req/s\n", row.Mode, row.Conc,
		rps(row.Direct), rps(row.Gateway))
}

// rps is a run's throughput: its requests over the time its loads took.
func rps(r Run) float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(len(r.Latency)) / r.Wall.Seconds()
}

func us(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) }

// Report prints the latency tables, the added cost and the verdict against the targets.
func Report(w io.Writer, rows []Row) (met bool) {
	met = true
	fmt.Fprintln(w, "\nLatency in µs (loopback HTTP, zero-delay upstream):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| mode | conc | target | p50 | p90 | p99 | n |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|")
	for _, r := range rows {
		for _, run := range []struct {
			name string
			Run
		}{{"direct", r.Direct}, {"gateway", r.Gateway}} {
			s := r.samples(run.Run)
			fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %d |\n", r.Mode, r.Conc, run.name,
				us(Percentile(s, 50)), us(Percentile(s, 90)), us(Percentile(s, 99)), len(s))
		}
	}
	fmt.Fprintln(w, "\nAdded by the gateway (gateway minus direct at the same percentile), ratio gateway/direct:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| mode | conc | p50 added µs | p50 ratio | p90 added µs | p99 added µs | p99 ratio | target p50<200µs, p99<2ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range rows {
		d, g := r.samples(r.Direct), r.samples(r.Gateway)
		a50, a90, a99 := Percentile(g, 50)-Percentile(d, 50), Percentile(g, 90)-Percentile(d, 90), Percentile(g, 99)-Percentile(d, 99)
		verdict := "met"
		if a50 >= TargetP50Added || a99 >= TargetP99Added {
			verdict, met = "NOT met", false
		}
		fmt.Fprintf(w, "| %s | %d | %s | %.2fx | %s | %s | %.2fx | %s |\n", r.Mode, r.Conc, us(a50),
			ratio(Percentile(g, 50), Percentile(d, 50)), us(a90), us(a99), ratio(Percentile(g, 99), Percentile(d, 99)), verdict)
	}
	fmt.Fprintln(w, "\nCost per request in this process (client + upstream + gateway; the gateway's share is the difference):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| mode | conc | direct B/req | gateway B/req | added B/req | added allocs/req | direct CPU µs/req | gateway CPU µs/req | added CPU µs/req |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		if r.TTFB {
			continue
		}
		dn, gn := float64(len(r.Direct.Latency)), float64(len(r.Gateway.Latency))
		db, gb := float64(r.Direct.Bytes)/dn, float64(r.Gateway.Bytes)/gn
		dm, gm := float64(r.Direct.Mallocs)/dn, float64(r.Gateway.Mallocs)/gn
		dc, gc := float64(r.Direct.CPU.Microseconds())/dn, float64(r.Gateway.CPU.Microseconds())/gn
		fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.0f | %.0f | %.1f | %.1f | %.1f |\n", r.Mode, r.Conc, db, gb, gb-db, gm-dm, dc, gc, gc-dc)
	}
	return met
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// HeapRun is one long stream through the gateway with the live heap watched.
type HeapRun struct {
	Chunks   int
	Frames   int
	Duration time.Duration
	Bytes    int64  // bytes of stream the client read
	Base     uint64 // live heap before the request
	First    uint64 // live heap at the first sample (5% of the stream)
	Last     uint64 // live heap at the last sample (the end of the stream)
	Peak     uint64 // highest live heap seen while streaming
}

// LongStream streams a response of chunks content chunks through the gateway, forcing a
// collection every few frames so HeapAlloc is the live heap, and returns the highest it saw.
func LongStream(e *Env, chunks int) (HeapRun, error) {
	_, gw := e.Targets()
	body := append(gw.Stream[:len(gw.Stream)-1:len(gw.Stream)-1], `,"bench_chunks":`+strconv.Itoa(chunks)+`}`...)
	client := NewClient(1)
	defer client.CloseIdleConnections()
	c := &caller{client: client}
	var ms runtime.MemStats
	live := func() uint64 {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	hr := HeapRun{Chunks: chunks, Base: live()}
	hr.Peak = hr.Base
	every := max(1, chunks/20)
	_, total, frames, err := c.stream(gw, body, func(frame int) {
		if frame%every == 0 {
			v := live()
			if hr.First == 0 {
				hr.First = v
			}
			hr.Last, hr.Peak = v, max(hr.Peak, v)
		}
	})
	if err != nil {
		return hr, err
	}
	if frames != chunks+4 {
		return hr, fmt.Errorf("long stream: %d frames, want %d", frames, chunks+4)
	}
	hr.Frames, hr.Duration, hr.Bytes = frames, total, c.read
	return hr, nil
}

// ReportHeap prints the long-stream table.
func ReportHeap(w io.Writer, runs []HeapRun) {
	fmt.Fprintln(w, "\nLive heap while streaming through the gateway (GC forced at 20 points of each stream):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| content chunks | streamed | stream time | live heap before | at 5% | at end | peak | peak - before |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|")
	kib := func(v uint64) string { return strconv.FormatUint(v/1024, 10) + " KiB" }
	for _, r := range runs {
		fmt.Fprintf(w, "| %d | %.1f MiB | %s | %s | %s | %s | %s | %+.0f KiB |\n", r.Chunks, float64(r.Bytes)/(1<<20),
			r.Duration.Round(time.Millisecond), kib(r.Base), kib(r.First), kib(r.Last), kib(r.Peak), (float64(r.Peak)-float64(r.Base))/1024)
	}
}
