package testenv

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/testkit/childproc"
)

// Lambda is a function binary running under the Runtime Interface Emulator.
type Lambda struct {
	url  string
	proc *childproc.Proc
	// The emulator crashes on two concurrent invokes; mu serializes them.
	mu sync.Mutex
}

// StartLambda runs bootstrap under the emulator with env added to the test's
// environment, and stops it when the test ends.
func StartLambda(t testing.TB, bootstrap string, env ...string) *Lambda {
	t.Helper()
	rie := RIE(t)
	var api, emu string
	for _, a := range []*string{&api, &emu} {
		addr, err := childproc.FreeAddr()
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		*a = addr
	}
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", emu, "--runtime-api-address", api, bootstrap)
	cmd.Env = append(os.Environ(), env...)
	p, err := childproc.Start(cmd)
	if err != nil {
		t.Fatalf("testenv: starting %s: %v", rie, err)
	}
	t.Cleanup(func() { p.Stop(stopGrace) })
	l := &Lambda{url: "http://" + emu + "/2015-03-31/functions/function/invocations", proc: p}
	// Any answer on the emulator's port means it is listening; it starts the
	// bootstrap on the first invoke.
	if err := p.WaitHTTP("http://"+emu+"/", 30*time.Second); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return l
}

// Invoke sends payload as one invocation and returns the function's raw output.
func (l *Lambda) Invoke(t testing.TB, payload []byte) []byte {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Post(l.url, "application/json", bytes.NewReader(payload))
	if err != nil {
		t.Fatalf("testenv: invoke: %v\n%s", err, l.proc.Output())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("testenv: invoke: status %d, %v: %s\n%s", resp.StatusCode, err, body, l.proc.Output())
	}
	return body
}

// Output returns what the emulator and the function logged so far.
func (l *Lambda) Output() string { return l.proc.Output() }
