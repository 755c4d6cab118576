package cloudbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/secureai-gateway/gateway/internal/testkit/childproc"
)

// buildFunction builds functions/openai-chat as the Makefile's lambda_build does (static,
// lambda.norpc, -trimpath, stripped), but for this machine's architecture, into dir/bootstrap.
func buildFunction(ctx context.Context, root, dir string) (string, error) {
	out := filepath.Join(dir, "bootstrap")
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w -buildid=",
		"-o", out, "./functions/openai-chat")
	cmd.Dir = root
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building functions/openai-chat: %v\n%s", err, b)
	}
	return out, nil
}

// lambda is the function's bootstrap under one Runtime Interface Emulator process. The emulator
// starts the bootstrap on the first invoke, so that invoke is a cold start.
type lambda struct {
	url    string
	proc   *childproc.Proc
	client *http.Client
}

func startLambda(rie, bootstrap string, env []string) (*lambda, error) {
	api, err := childproc.FreeAddr()
	if err != nil {
		return nil, err
	}
	emu, err := childproc.FreeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", emu, "--runtime-api-address", api, bootstrap)
	cmd.Env = env
	p, err := childproc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", rie, err)
	}
	if err := p.WaitHTTP("http://"+emu+"/", 30*time.Second); err != nil {
		p.Stop(stopGrace)
		return nil, err
	}
	return &lambda{url: "http://" + emu + "/2015-03-31/functions/function/invocations", proc: p,
		client: &http.Client{Timeout: 60 * time.Second}}, nil
}

// invoke sends one event and returns the function's whole output. Never call it concurrently:
// the emulator crashes on two invokes at once.
func (l *lambda) invoke(event []byte) ([]byte, error) {
	resp, err := l.client.Post(l.url, "application/json", bytes.NewReader(event))
	if err != nil {
		return nil, fmt.Errorf("invoke: %w\n%s", err, l.proc.Output())
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("invoke: status %d, %v: %s\n%s", resp.StatusCode, err, out, l.proc.Output())
	}
	return out, nil
}

func (l *lambda) stop() { l.proc.Stop(stopGrace) }
