package testenv

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"sync"
	"time"
)

// process is a started tool whose output is kept (bounded) for failure messages.
type process struct {
	cmd    *exec.Cmd
	out    *SyncBuffer
	exited chan struct{} // closed when the process ends
	err    error         // Wait's result, valid after exited
}

func startProcess(cmd *exec.Cmd) (*process, error) {
	p := &process{cmd: cmd, out: &SyncBuffer{Max: 64 << 10}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
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

// waitHTTP polls url until anything answers, the process dies, or timeout.
func (p *process) waitHTTP(url string, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited: %v\n%s", p.cmd.Path, p.err, p.out)
		default:
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready at %s after %v\n%s", p.cmd.Path, url, timeout, p.out)
}

// stop ends the process and everything it started, politely first.
func (p *process) stop() {
	signalGroup(p.cmd, false)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		signalGroup(p.cmd, true)
		<-p.exited
	}
}

// SyncBuffer collects output written by several goroutines (a process's copiers, a logger) for a
// test to read while they run. With Max set it keeps the first Max bytes, where startup errors are.
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
