package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/testkit/childproc"
)

// stopGrace is how long a tool has to end after SIGTERM before it is killed.
const stopGrace = 5 * time.Second

// shared holds the tools started once per test binary and stopped by Main.
var shared struct {
	mu       sync.Mutex
	inMain   bool
	motoOnce sync.Once
	moto     *childproc.Proc
	motoURL  string
	motoErr  error

	serialOnce sync.Once
	serial     *childproc.Proc
	serialURL  string
	serialErr  error

	iamOnce sync.Once
	iam     *childproc.Proc
	iamMoto *IAMMoto
	iamErr  error
}

// Main runs the package's tests and then stops the tools they shared and
// removes shared builds. Every package that calls Moto needs it:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// A per-binary server cannot be stopped from a t.Cleanup (the first test's
// cleanup would kill it under later tests), and without a stop it would outlive
// the test binary.
func Main(m *testing.M) {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()
	code := m.Run()
	stopShared()
	removeBuilds()
	os.Exit(code)
}

func stopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.moto != nil {
		shared.moto.Stop(stopGrace)
		shared.moto = nil
	}
	if shared.serial != nil {
		shared.serial.Stop(stopGrace)
		shared.serial = nil
	}
	if shared.iam != nil {
		shared.iam.Stop(stopGrace)
		shared.iam = nil
	}
}

// Moto returns the endpoint (http://127.0.0.1:port) of the test binary's one
// moto_server, starting it on first use. All AWS services share it, and state
// persists across the binary's tests: give tables, buses and queues names unique
// to the test (UniqueName).
func Moto(t testing.TB) string {
	t.Helper()
	requireMain(t, "Moto")
	shared.motoOnce.Do(func() {
		var p *childproc.Proc
		shared.motoURL, p, shared.motoErr = startMoto(".venv/bin/moto_server", func(bin, host, port string) *exec.Cmd {
			return exec.Command(bin, "-H", host, "-p", port)
		})
		shared.mu.Lock()
		shared.moto = p
		shared.mu.Unlock()
	})
	if shared.motoErr != nil {
		t.Fatalf("testenv.Moto: %v", shared.motoErr)
	}
	return shared.motoURL
}

func requireMain(t testing.TB, fn string) {
	t.Helper()
	shared.mu.Lock()
	inMain := shared.inMain
	shared.mu.Unlock()
	if !inMain {
		t.Fatalf("testenv.%s: add `func TestMain(m *testing.M) { testenv.Main(m) }` to this package so moto stops with the test binary", fn)
	}
}

// startMoto starts the tool at rel (relative to the repo root) with command, on a free port.
func startMoto(rel string, command func(bin, host, port string) *exec.Cmd) (string, *childproc.Proc, error) {
	bin, err := tool(rel)
	if err != nil {
		return "", nil, err
	}
	// The port is picked before moto binds it; another process can take it in
	// between, so a failed start is retried on a fresh port.
	var lastErr error
	for range 3 {
		addr, err := childproc.FreeAddr()
		if err != nil {
			return "", nil, err
		}
		host, port, _ := strings.Cut(addr, ":")
		p, err := childproc.Start(command(bin, host, port))
		if err != nil {
			return "", nil, err
		}
		url := "http://" + addr
		if lastErr = p.WaitHTTP(url+"/moto-api/", 60*time.Second); lastErr == nil {
			return url, p, nil
		}
		p.Stop(stopGrace)
	}
	return "", nil, fmt.Errorf("starting %s: %w", rel, lastErr)
}

// UniqueName returns a name for an AWS resource unique to this test within the
// shared emulator, valid for DynamoDB tables, SQS queues and event buses.
func UniqueName(t testing.TB, prefix string) string {
	name := prefix + "-" + strings.NewReplacer("/", "-", " ", "-", "#", "-").Replace(t.Name())
	name += fmt.Sprintf("-%d", time.Now().UnixNano()%1e9)
	if len(name) > 80 { // SQS queue names are capped at 80
		name = name[len(name)-80:]
	}
	return name
}
