package childproc

import (
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestWaitHTTPSaysTheProcessExitedAndWhatItPrinted(t *testing.T) {
	p, err := Start(exec.Command("sh", "-c", "echo cannot start >&2; exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	err = p.WaitHTTP("http://127.0.0.1:1/", 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "cannot start") {
		t.Errorf("WaitHTTP: %v, want an error saying the process exited, with its output", err)
	}
}

func TestWaitHTTPReturnsOnceAnythingAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler()}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	p, err := Start(exec.Command("sleep", "60"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	if err := p.WaitHTTP("http://"+ln.Addr().String()+"/", 10*time.Second); err != nil {
		t.Errorf("WaitHTTP with a server answering 404: %v", err)
	}
}

func TestStopEndsTheWholeGroup(t *testing.T) {
	// The shell's child, not the shell, holds the pipe open: only a signal to the group ends it
	// (a signal to the shell alone would leave Stop waiting on the pipe for the whole minute).
	p, err := Start(exec.Command("sh", "-c", "sleep 60 & echo started; wait"))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(p.Output(), "started"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the shell did not start its child within 5 s")
		}
	}
	done := make(chan struct{})
	go func() { p.Stop(10 * time.Second); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not end the process group within 5 s of its SIGTERM")
	}
}

func TestSyncBufferKeepsTheFirstMaxBytes(t *testing.T) {
	b := &SyncBuffer{Max: 5}
	for _, s := range []string{"abc", "defg", "hij"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v: want every byte taken", s, n, err)
		}
	}
	if got := b.String(); got != "abcde" {
		t.Errorf("kept %q, want %q", got, "abcde")
	}
}
