// Package childproc runs a helper process — moto, the Lambda emulator, the gateway a benchmark
// measures — in its own process group, so that stopping it stops what it started too (moto_server
// is a Python entry-point script, the emulator starts the function's bootstrap). It knows when
// the process has exited, waits until it answers HTTP and stops it politely first. The test kit
// (internal/testkit/testenv) and the benchmarks share it; it links nothing of package testing.
package childproc

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"time"
)

// keptOutput is how much of a process's output Start keeps when cmd sends it nowhere: the start,
// where a tool says why it could not start.
const keptOutput = 64 << 10

// Proc is a started process.
type Proc struct {
	cmd    *exec.Cmd
	out    *SyncBuffer   // nil when cmd's output went where its caller said
	exited chan struct{} // closed when the process has ended
	err    error         // Wait's result, valid once exited is closed
}

// Start starts cmd in a process group of its own. When cmd has no Stdout and Stderr, its output
// (the first 64 KiB) is kept for Output and for the errors of WaitHTTP.
func Start(cmd *exec.Cmd) (*Proc, error) {
	p := &Proc{cmd: cmd, exited: make(chan struct{})}
	if cmd.Stdout == nil && cmd.Stderr == nil {
		p.out = &SyncBuffer{Max: keptOutput}
		cmd.Stdout, cmd.Stderr = p.out, p.out
	}
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Output is what Start kept of the process's output ("" when its caller sent it elsewhere).
func (p *Proc) Output() string {
	if p.out == nil {
		return ""
	}
	return p.out.String()
}

// WaitHTTP polls url until anything answers, the process ends, or bound has passed.
func (p *Proc) WaitHTTP(url string, bound time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); {
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it answered at %s (%v)\n%s", p.cmd.Path, url, p.err, p.Output())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer at %s within %s\n%s", p.cmd.Path, url, bound, p.Output())
}

// Stop ends the process group with SIGTERM, and kills it if it has not ended within grace.
func (p *Proc) Stop(grace time.Duration) {
	signalGroup(p.cmd, false)
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill ends the process group with SIGKILL, as a crash would, and returns once the process has
// ended.
func (p *Proc) Kill() {
	signalGroup(p.cmd, true)
	<-p.exited
}

// FreeAddr is a 127.0.0.1 address with a port that was free a moment ago, for a process that
// must be told where to listen.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// SyncBuffer collects output written by several goroutines (a process's copiers, a logger) for a
// reader while they run. With Max set it keeps the first Max bytes, where startup errors are.
type SyncBuffer struct {
	Max int // 0: unbounded
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Max == 0 {
		return b.buf.Write(p)
	}
	if room := b.Max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
