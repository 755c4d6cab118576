package agentclients

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/testkit/gatewayproc"
)

// runBound bounds one client run: a plain answer takes a few seconds, a tool turn a few more.
// Client retries are turned off, so a failure ends the run at once rather than at this bound.
const runBound = 90 * time.Second

// The model ids the clients send, each a catalog alias for the chain fake/fail → fake/agent. Claude
// Code shapes its request by the id it sends (role-system messages, thinking, betas), so it is run
// with a known id and with one of the gateway's own.
const (
	claudeKnownID   = "claude-sonnet-4-5"
	claudeGatewayID = "gw-claude-agent"
	codexID         = "gw-codex"
	openaiID        = "gw-openai-agent"
)

var aliases = []string{claudeKnownID, claudeGatewayID, codexID, openaiID}

var (
	buildOnce sync.Once
	gwBin     string
	buildErr  error
	buildDir  string
)

// gatewayBinary builds cmd/gateway once for the package, as make run builds it.
func gatewayBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "agentclients-gateway-")
		if buildErr == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			gwBin, buildErr = gatewayproc.Build(ctx, buildDir)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return gwBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// env is one gateway, started as make run starts it, in front of its own scripted fake provider,
// with a key for the clients and a loopback proxy that refuses everything.
type env struct {
	fake  *fakeProvider
	gw    *gatewayproc.Gateway
	key   string
	proxy *refusingProxy
}

func newEnv(t *testing.T) *env {
	t.Helper()
	bin := gatewayBinary(t)
	fake, fakeURL := startFake(t)
	dir := t.TempDir()
	cat := map[string]any{
		"providers": map[string]any{"fake": map[string]any{"type": "openai", "base_url": fakeURL}},
		"models": map[string]any{
			"fake/" + failModel:  map[string]any{"upstream": failModel},
			"fake/" + agentModel: map[string]any{"upstream": agentModel},
		},
		"aliases": map[string]any{},
	}
	for _, a := range aliases {
		cat["aliases"].(map[string]any)[a] = map[string]any{"models": []string{"fake/" + failModel, "fake/" + agentModel}}
	}
	raw, _ := json.Marshal(cat)
	config := filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(config, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gw, err := gatewayproc.Start(context.Background(), bin, filepath.Join(dir, "store"), "", filepath.Join(dir, "gateway.log"),
		"SECUREAI_CONFIG="+config, "SECUREAI_DEMO=false")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{fake: fake, gw: gw, proxy: startRefusingProxy(t)}
	t.Cleanup(func() {
		gw.Stop()
		if t.Failed() {
			t.Logf("gateway log (tail):\n%s", gw.LogTail(20000))
		}
		t.Logf("the fake provider served:\n%s", fake.summary())
		if hosts := e.proxy.attempts(); len(hosts) > 0 {
			t.Logf("outbound attempts refused by the loopback proxy: %s", strings.Join(hosts, ", "))
		}
	})
	e.key = createKey(t, ctx, gw.Base, gw.Admin)
	return e
}

// createKey makes a normal key through the admin API and returns its secret.
func createKey(t *testing.T, ctx context.Context, base, admin string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/admin/api-keys", strings.NewReader(`{"name":"agent-clients","rateLimit":{"requestsPerMinute":1000,"requestsPerHour":10000},"dailyLimit":100000}`))
	req.Header.Set("Authorization", "Bearer "+admin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Secret string `json:"secret"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusCreated || out.Secret == "" {
		t.Fatalf("creating a key: status %d, %v", res.StatusCode, err)
	}
	return out.Secret
}

// clientEnv is the environment every client runs with: a home of its own, no telemetry or
// updates, and every proxy variable pointing at the refusing loopback proxy, so nothing leaves
// the machine; the gateway itself (127.0.0.1) is reached directly.
func (e *env) clientEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	home := t.TempDir()
	proxy := "http://" + e.proxy.addr
	base := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"TMPDIR=" + os.TempDir(),
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
		"HTTPS_PROXY=" + proxy, "HTTP_PROXY=" + proxy, "ALL_PROXY=" + proxy,
		"https_proxy=" + proxy, "http_proxy=" + proxy, "all_proxy=" + proxy,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
	}
	return append(base, extra...)
}

// runResult is one finished client run.
type runResult struct {
	stdout, stderr string
	err            error
}

// run runs a client in dir with env, bounded by runBound, and returns what it printed.
func run(t *testing.T, dir string, env []string, name string, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader("")
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	t.Logf("%s ran %.1fs (%v)", filepath.Base(name), time.Since(start).Seconds(), err)
	return runResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// requireOK fails the test unless the run exited 0 with want in its stdout.
func (r runResult) requireOK(t *testing.T, want string) {
	t.Helper()
	if r.err != nil || !strings.Contains(r.stdout, want) {
		t.Fatalf("the client exited with %v; want %q in its output\nstdout:\n%s\nstderr:\n%s", r.err, want, r.stdout, tail(r.stderr, 8000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// requireFailover checks that the fallback fake/agent served at least turns requests and that
// each of them came right after an attempt of the primary fake/fail, which answered 500: every
// turn of the client failed over inside the gateway.
func (e *env) requireFailover(t *testing.T, turns int) {
	t.Helper()
	x := e.fake.exchanges()
	served := 0
	for i := range x {
		if x[i].Model != agentModel {
			continue
		}
		served++
		if i == 0 || x[i-1].Model != failModel {
			served = -1
			break
		}
	}
	if served < turns {
		t.Errorf("want each of %d turn(s) tried on fake/fail, which failed, then served by fake/agent; the fake served:\n%s", turns, e.fake.summary())
	}
}

// agentRequests are the requests fake/agent served.
func (e *env) agentRequests() []exchange {
	var out []exchange
	for _, x := range e.fake.exchanges() {
		if x.Model == agentModel {
			out = append(out, x)
		}
	}
	return out
}

// requireToolRoundTrip checks that fake/agent answered a call of tool and that a later request
// carried that call's result (a role-tool message for call_fake1) containing want.
func (e *env) requireToolRoundTrip(t *testing.T, tool, want string) {
	t.Helper()
	reqs := e.agentRequests()
	called := -1
	for i, x := range reqs {
		if x.Reply == "tool_call "+tool {
			called = i
			break
		}
	}
	if called < 0 {
		t.Fatalf("fake/agent never answered a %s call; the fake served:\n%s", tool, e.fake.summary())
	}
	for _, x := range reqs[called+1:] {
		for _, m := range x.Req.Messages {
			if m.Role == "tool" && m.ToolCallID == "call_fake1" && strings.Contains(text(m.Content), want) {
				return
			}
		}
	}
	t.Fatalf("no request after the %s call carried its result holding %q; the fake served:\n%s", tool, want, e.fake.summary())
}

// refusingProxy is an HTTP proxy on loopback that records where each request or CONNECT wanted to
// go and refuses it, so a client that tries to reach the internet fails fast and visibly.
type refusingProxy struct {
	addr  string
	mu    sync.Mutex
	hosts []string
}

func startRefusingProxy(t *testing.T) *refusingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &refusingProxy{addr: ln.Addr().String()}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.refuse(c)
		}
	}()
	return p
}

func (p *refusingProxy) refuse(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	req, err := http.ReadRequest(bufio.NewReader(c))
	host := "(unreadable request)"
	if err == nil {
		host = req.Method + " " + req.Host
	}
	p.mu.Lock()
	p.hosts = append(p.hosts, host)
	p.mu.Unlock()
	_, _ = c.Write([]byte("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
}

func (p *refusingProxy) attempts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.hosts...)
}
