package latencybench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewayproc"
)

// The process benchmark measures what users run: cmd/gateway as its own process, started as
// make run starts it (the embedded bbolt store in a directory on disk, limits, billing, receipts,
// events, audit and the access log all on, the demo provider at its default, on), with the fake
// upstream of this package as a provider of its catalog. The in-process Measure leaves all of
// that out and saw a fraction of the cost.

// ProcessConfig says what to measure on the gateway process.
type ProcessConfig struct {
	Config               // Requests, Warmup and Rounds per cell, and the Concurrency levels
	Reps   int           // the whole load is run this many times, so growth across them shows
	Settle time.Duration // pause after each load before the gateway's memory is read again
	Dir    string        // parent of the run's directory; on disk, not tmpfs
	Keep   bool          // keep the run's directory (binary, store, access log) afterwards
}

// ProcessModes are the request kinds of each concurrency: a plain completion, a stream, and a
// plain completion whose chain fails over (FailModel answers 500, Model serves), on the chat
// surface; then a plain completion and a stream on each agent surface (Anthropic Messages, OpenAI
// Responses), whose direct figure is the same chat call to the upstream, so their added latency
// and CPU per request compare with the chat rows' (issue 32 item 6: within 10 %).
var ProcessModes = []string{"plain", "stream", "failover", "messages", "messages stream", "responses", "responses stream"}

// streamed says whether a mode's requests are streams.
func streamed(mode string) bool { return mode == "stream" || strings.HasSuffix(mode, " stream") }

// chatMode is the chat mode an agent surface's mode compares with, "" for a chat mode.
func chatMode(mode string) string {
	if !strings.HasPrefix(mode, "messages") && !strings.HasPrefix(mode, "responses") {
		return ""
	}
	if streamed(mode) {
		return "stream"
	}
	return "plain"
}

// ProcessRun is the outcome of RunProcess.
type ProcessRun struct {
	Config   ProcessConfig
	Dir      string // the run's directory, the store is Dir/data/gateway.db
	FS       string // the file system it is on
	Pid      int
	Keys     int   // API keys the load was spread over
	StartRSS int64 // the gateway's resident memory once the keys were made, before any load
	Reps     []Rep
	Final    StoreSize // after the gateway stopped (its last limit counts saved)
	Use      StoreUse  // what the store holds then
}

// Rep is one whole load: every concurrency and mode.
type Rep struct {
	Rows       []Row  // Mode is one of ProcessModes
	FloorRSS   int64  // the floor proxy's VmRSS after its load
	FloorAnon  int64  // of which anonymous (RssAnon): its own memory, not its binary's pages
	Served     uint64 // gateway requests answered, warm-up included
	RSSAfter   int64  // VmRSS as the load ends
	FileAfter  int64  // of which file-backed (RssFile): the binary and the store's memory map, not heap
	RSSSettled int64  // VmRSS after the settle pause
	Before     StoreSize
	After      StoreSize // after the settle pause
	LogBytes   int64     // the access log's growth
}

// StoreSize is the store file's size, its disk use and its pages' high-water mark, in bytes.
type StoreSize struct {
	File, Allocated, HighWater int64
}

// Limits of the benchmark's keys: every one counted, none reached. Each key takes at most
// perKeyRequests of the whole run (the key ring hands them out in turn), below the most a
// minute an admin may grant, so no window can fill however fast the run goes.
const (
	perKeyRequests = 900
	keyDailyLimit  = 10_000 // also the monthly limit; above perKeyRequests and the admin key's calls
	// keyPoints is each key's user's monthly allowance: a request reserves at most a point (the
	// dearest model of its chain), so ten times what a key sends leaves room for the reservations
	// of the requests in flight.
	keyPoints = 10 * perKeyRequests
	// adminCalls bounds the admin API calls of the setup (two a key: its user's points, the
	// key) one admin key makes, which its own per-minute limit counts; a tenth of it is left spare.
	adminCalls = apikey.MaxPerMinute * 9 / 10
	// maxAdmins bounds the admin keys the bootstrap key creates to share that work, below its
	// default 60 requests a minute.
	maxAdmins = 50
)

// admins is how many admin keys make n keys.
func admins(n int) int { return max(1, (2*n+adminCalls-1)/adminCalls) }

// RunProcess builds and starts the gateway process, makes the keys, runs the load cfg.Reps
// times and stops the gateway. log receives progress and the run's setup.
func RunProcess(ctx context.Context, cfg ProcessConfig, log io.Writer) (*ProcessRun, error) {
	run := &ProcessRun{Config: cfg}
	perRep := len(cfg.Concurrency) * len(ProcessModes) * cfg.gatewayRequests()
	run.Keys = max(1, (max(1, cfg.Reps)*perRep+perKeyRequests-1)/perKeyRequests)
	if admins(run.Keys) > maxAdmins {
		return nil, fmt.Errorf("%d gateway requests would need %d keys, more than %d admin keys may create in a minute; lower -n, -reps or -c",
			max(1, cfg.Reps)*perRep, run.Keys, maxAdmins)
	}

	var err error
	if run.Dir, err = os.MkdirTemp(cfg.Dir, "secureai-bench-"); err != nil {
		return nil, err
	}
	if !cfg.Keep {
		defer os.RemoveAll(run.Dir)
	}
	if run.FS, err = diskKind(run.Dir); err != nil {
		return nil, err
	}
	keep := "removed at the end (-keep keeps it)"
	if cfg.Keep {
		keep = "kept"
	}
	fmt.Fprintf(log, "run directory %s on %s, %s\n", run.Dir, run.FS, keep)

	up, upBase, err := startUpstream(Upstream{})
	if err != nil {
		return nil, err
	}
	defer up.Close()
	overlay := filepath.Join(run.Dir, "catalog.json")
	raw, err := json.Marshal(benchCatalog(upBase))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(overlay, raw, 0o600); err != nil {
		return nil, err
	}
	fmt.Fprintln(log, "building cmd/gateway…")
	bin, err := gatewayproc.Build(ctx, run.Dir)
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(run.Dir, "data")
	db := filepath.Join(dataDir, "gateway.db")
	g, err := startGateway(ctx, bin, dataDir, filepath.Join(run.Dir, "gateway.log"), []string{"SECUREAI_CONFIG=" + overlay})
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			g.Stop()
		}
	}()
	run.Pid = g.Pid()
	fmt.Fprintf(log, "gateway pid %d at %s, store %s, access log %s; upstream %s\n", run.Pid, g.Base, db, g.LogPath, upBase)
	fmt.Fprintf(log, "  (the gateway process has no pprof endpoint; to profile it attach from outside, e.g. perf record -g -p %d)\n", run.Pid)

	fmt.Fprintf(log, "creating %d API keys through the admin API (each key at most %d of the run's requests)…\n", run.Keys, perKeyRequests)
	ring, err := makeKeys(g, run.Keys)
	if err != nil {
		return nil, err
	}
	if run.StartRSS, err = procStatus(run.Pid, "VmRSS"); err != nil {
		return nil, err
	}

	up.GatewayURL = g.Base + "/v1/chat/completions"
	direct, gw := up.Targets()
	var floor Target
	var floorPid int
	if slices.Contains(cfg.Concurrency, 1) {
		fp, err := startFloor(ctx, run.Dir, direct.URL)
		if err != nil {
			return nil, err
		}
		defer fp.Stop()
		floorPid = fp.Pid()
		floor = Target{Name: "floor", URL: fp.Base, Plain: direct.Plain,
			ServerCPU: func() (time.Duration, error) { return procCPU(floorPid) }}
		fmt.Fprintf(log, "floor proxy (a bare Go reverse proxy, pid %d) at %s\n", floorPid, fp.Base)
	}
	gw.Auth, gw.Keys = "", ring
	gw.ServerCPU = func() (time.Duration, error) { return procCPU(run.Pid) }
	failover := gw
	failover.Plain = failoverBody
	messages, responses := Surfaces(gw, g.Base)
	targets := map[string]Target{"plain": gw, "stream": gw, "failover": failover,
		"messages": messages, "messages stream": messages, "responses": responses, "responses stream": responses}

	for i := range max(1, cfg.Reps) {
		fmt.Fprintf(log, "repetition %d of %d:\n", i+1, max(1, cfg.Reps))
		rep := Rep{}
		if rep.Before, err = storeSize(db); err != nil {
			return nil, err
		}
		log0 := fileSize(g.LogPath)
		taken := ring.Taken()
		for _, conc := range cfg.Concurrency {
			client := NewClient(conc)
			for _, mode := range ProcessModes {
				row, err := compare(client, direct, targets[mode], streamed(mode), conc, cfg.Config)
				if err != nil {
					return nil, fmt.Errorf("%s c=%d: %w", mode, conc, err)
				}
				row.Mode = mode
				logRow(log, row)
				rep.Rows = append(rep.Rows, row)
			}
			if conc == 1 && floor.URL != "" {
				row, err := compare(client, direct, floor, false, 1, cfg.Config)
				if err != nil {
					return nil, fmt.Errorf("floor proxy: %w", err)
				}
				row.Mode = "floor"
				fmt.Fprintf(log, "  measured %-16s c=1   direct %6.0f req/s, floor   %6.0f req/s (plain, a bare Go proxy)\n", "floor", rps(row.Direct), rps(row.Gateway))
				rep.Rows = append(rep.Rows, row)
				if rep.FloorRSS, err = procStatus(floorPid, "VmRSS"); err != nil {
					return nil, err
				}
				if rep.FloorAnon, err = procStatus(floorPid, "RssAnon"); err != nil {
					return nil, err
				}
			}
			client.CloseIdleConnections()
		}
		rep.Served = ring.Taken() - taken // a request that failed would have ended the run
		if rep.RSSAfter, err = procStatus(run.Pid, "VmRSS"); err != nil {
			return nil, err
		}
		if rep.FileAfter, err = procStatus(run.Pid, "RssFile"); err != nil {
			return nil, err
		}
		time.Sleep(cfg.Settle)
		if rep.RSSSettled, err = procStatus(run.Pid, "VmRSS"); err != nil {
			return nil, err
		}
		if rep.After, err = storeSize(db); err != nil {
			return nil, err
		}
		rep.LogBytes = fileSize(g.LogPath) - log0
		run.Reps = append(run.Reps, rep)
	}

	g.Stop()
	stopped = true
	if run.Final, err = storeSize(db); err != nil {
		return nil, err
	}
	if run.Use, err = boltUse(db); err != nil {
		return nil, err
	}
	return run, nil
}

// makeKeys creates n keys, each billing its own user given keyPoints, all limits set and
// counted, and returns them as a ring. The bootstrap key is held to the default 60 requests a
// minute, so it only creates the admin keys that make the rest, each at most adminCalls calls.
func makeKeys(g *gatewayProc, n int) (*KeyRing, error) {
	adminKeys := make([]string, admins(n))
	var err error
	for i := range adminKeys {
		adminKeys[i], err = g.createKey(g.Admin, keySpec{Name: fmt.Sprintf("bench-admin-%d", i), Admin: true, RateLimit: maxRate,
			DailyLimit: keyDailyLimit, MonthlyLimit: keyDailyLimit})
		if err != nil {
			return nil, err
		}
	}
	secrets := make([]string, n)
	for i := range n {
		admin := adminKeys[2*i/adminCalls]
		user := fmt.Sprintf("bench-user-%d", i)
		if err := g.setPoints(admin, user, keyPoints); err != nil {
			return nil, err
		}
		secrets[i], err = g.createKey(admin, keySpec{Name: fmt.Sprintf("bench-%d", i), UserID: user, RateLimit: maxRate,
			DailyLimit: keyDailyLimit, MonthlyLimit: keyDailyLimit})
		if err != nil {
			return nil, err
		}
	}
	return NewKeyRing(secrets), nil
}

func storeSize(path string) (StoreSize, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return StoreSize{}, err
	}
	s := StoreSize{File: fi.Size(), Allocated: allocated(fi)}
	s.HighWater, err = boltHighWater(path)
	return s, err
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
