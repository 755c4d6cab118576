package cloudbench

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"sync"
	"time"
)

// proc is a tool this benchmark started (moto, the emulator), in its own process group so that
// stopping it stops its children (the emulator's bootstrap) too.
type proc struct {
	cmd    *exec.Cmd
	out    lockedBuffer
	exited chan struct{}
}

func startProc(cmd *exec.Cmd) (*proc, error) {
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// stop ends the process group, politely first.
func (p *proc) stop() {
	signalGroup(p.cmd, false)
	select {
	case <-p.exited:
	case <-time.After(3 * time.Second):
		signalGroup(p.cmd, true)
		<-p.exited
	}
}

// waitHTTP waits until anything answers at url, while the process lives.
func (p *proc) waitHTTP(url string, bound time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); {
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it listened:\n%s", p.cmd.Path, p.out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer at %s within %s", p.cmd.Path, url, bound)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
