package cloudbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Config is what a run measures.
type Config struct {
	Delays   []time.Duration // the injected delays D, each a column of the report (at least two for a slope)
	Warm     int             // measured warm invocations per delay and mode, after one warm-up
	Cold     int             // cold samples per delay and mode, each a fresh emulator process
	Failover bool            // also measure the failover mode (warm only)
}

// Cell is one measured combination: the requests in invocation order and the AWS calls that
// arrived between invocations (background work after a response).
type Cell struct {
	Delay    time.Duration
	Mode     string // one of Modes
	Cold     bool
	Requests []Request
	Stray    []Span
}

// Latencies returns the invocations' latencies, sorted.
func (c *Cell) Latencies() []time.Duration {
	out := make([]time.Duration, len(c.Requests))
	for i, r := range c.Requests {
		out[i] = r.End.Sub(r.Start)
	}
	slices.Sort(out)
	return out
}

// Run is a whole measurement.
type Run struct {
	Config Config
	Cells  []*Cell
}

// Cell returns the measured cell, nil if none.
func (r *Run) Cell(d time.Duration, mode string, cold bool) *Cell {
	for _, c := range r.Cells {
		if c.Delay == d && c.Mode == mode && c.Cold == cold {
			return c
		}
	}
	return nil
}

// bench holds the running pieces: moto behind the delay proxy, the fake upstream, the built
// function and the deployment it runs in.
type bench struct {
	rie, bootstrap string
	env            []string
	events         map[string][]byte
	proxy          *DelayProxy
	up             *Upstream
}

// Measure builds the function, starts moto, the delay proxy and the fake upstream, creates the
// deployment and measures every cell, logging progress to log. Everything listens on 127.0.0.1.
func Measure(ctx context.Context, cfg Config, log io.Writer) (*Run, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	rie := filepath.Join(root, ".bin/aws-lambda-rie")
	for _, tool := range []string{rie, filepath.Join(root, ".venv/bin/moto_server")} {
		if _, err := os.Stat(tool); err != nil {
			return nil, fmt.Errorf("%s is missing: run make test-tools", tool)
		}
	}
	dir, err := os.MkdirTemp("", "secureai-cloudbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	fmt.Fprintln(log, "building functions/openai-chat (Makefile flags, this machine's architecture) and starting moto…")
	type built struct {
		bin string
		err error
	}
	ch := make(chan built, 1)
	go func() { bin, err := buildFunction(ctx, root, dir); ch <- built{bin, err} }()
	moto, motoURL, err := startMoto(root)
	b := <-ch
	if err != nil {
		return nil, err
	}
	defer moto.Stop(stopGrace)
	if b.err != nil {
		return nil, b.err
	}
	proxy, err := StartDelayProxy(motoURL)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	up, err := StartUpstream()
	if err != nil {
		return nil, err
	}
	defer up.Close()
	d, err := deploy(ctx, motoURL, proxy.URL, up.URL, dir)
	if err != nil {
		return nil, fmt.Errorf("creating the deployment on moto: %w", err)
	}
	events, err := loadEvents(root, d.secret)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "moto %s, delay proxy %s, fake upstream %s, emulator %s\n\n", motoURL, proxy.URL, up.URL, rie)
	bn := &bench{rie: rie, bootstrap: b.bin, env: functionEnv(d), events: events, proxy: proxy, up: up}

	run := &Run{Config: cfg}
	modes := []string{"plain", "stream"}
	if cfg.Failover {
		modes = append(modes, "failover")
	}
	for _, delay := range cfg.Delays {
		proxy.SetDelay(delay)
		fmt.Fprintf(log, "D=%s: %d warm invocations per mode after a warm-up…\n", delay, cfg.Warm)
		cells, err := bn.warm(delay, modes, cfg.Warm)
		if err != nil {
			return nil, err
		}
		run.Cells = append(run.Cells, cells...)
		fmt.Fprintf(log, "D=%s: %d cold samples per mode, a fresh emulator each…\n", delay, cfg.Cold)
		for _, mode := range modes[:2] {
			c, err := bn.cold(delay, mode, cfg.Cold)
			if err != nil {
				return nil, err
			}
			run.Cells = append(run.Cells, c)
		}
	}
	proxy.SetDelay(0)
	return run, nil
}

// warm runs one emulator: a warm-up invocation of each mode (the very first is its cold start),
// then n measured invocations of each.
func (b *bench) warm(delay time.Duration, modes []string, n int) ([]*Cell, error) {
	l, err := startLambda(b.rie, b.bootstrap, b.env)
	if err != nil {
		return nil, err
	}
	defer l.stop()
	var cells []*Cell
	for _, mode := range modes {
		if _, err := b.invoke(l, mode); err != nil {
			return nil, err
		}
		c := &Cell{Delay: delay, Mode: mode}
		b.drain()
		for range n {
			r, err := b.invoke(l, mode)
			if err != nil {
				return nil, err
			}
			c.Requests = append(c.Requests, r)
		}
		time.Sleep(50 * time.Millisecond) // let background calls after the last response land
		c.Stray = Assign(c.Requests, b.proxy.Take(), b.up.Take())
		cells = append(cells, c)
	}
	return cells, nil
}

// cold measures n first invocations, each of a fresh emulator (and so a fresh bootstrap process:
// the emulator starts it on the first invoke, which is timed).
func (b *bench) cold(delay time.Duration, mode string, n int) (*Cell, error) {
	c := &Cell{Delay: delay, Mode: mode, Cold: true}
	var calls, attempts []Span
	for range n {
		l, err := startLambda(b.rie, b.bootstrap, b.env)
		if err != nil {
			return nil, err
		}
		b.drain()
		r, err := b.invoke(l, mode)
		time.Sleep(50 * time.Millisecond)
		l.stop()
		if err != nil {
			return nil, err
		}
		c.Requests = append(c.Requests, r)
		calls, attempts = append(calls, b.proxy.Take()...), append(attempts, b.up.Take()...)
	}
	c.Stray = Assign(c.Requests, calls, attempts)
	return c, nil
}

// invoke times one invocation and checks its answer.
func (b *bench) invoke(l *lambda, mode string) (Request, error) {
	start := time.Now()
	out, err := l.invoke(b.events[mode])
	r := Request{Start: start, End: time.Now()}
	if err == nil {
		err = CheckOutput(out, mode == "stream")
	}
	if err != nil {
		return r, fmt.Errorf("%s invocation: %w", mode, err)
	}
	return r, nil
}

// drain forgets what the proxy and the upstream recorded so far.
func (b *bench) drain() { b.proxy.Take(); b.up.Take() }

// repoRoot is the module's directory (go run ./cmd/bench runs inside the checkout).
func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run the cloud benchmark inside the gateway's checkout (no go.mod found)")
	}
	return filepath.Dir(mod), nil
}
