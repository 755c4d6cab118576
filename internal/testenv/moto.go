package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// shared holds the tools started once per test binary and stopped by Main.
var shared struct {
	mu       sync.Mutex
	inMain   bool
	motoOnce sync.Once
	moto     *process
	motoURL  string
	motoErr  error
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
		shared.moto.stop()
		shared.moto = nil
	}
}

// Moto returns the endpoint (http://127.0.0.1:port) of the test binary's one
// moto_server, starting it on first use. All AWS services share it, and state
// persists across the binary's tests: give tables, buses and queues names unique
// to the test (UniqueName).
func Moto(t testing.TB) string {
	t.Helper()
	shared.mu.Lock()
	inMain := shared.inMain
	shared.mu.Unlock()
	if !inMain {
		t.Fatalf("testenv.Moto: add `func TestMain(m *testing.M) { testenv.Main(m) }` to this package so moto_server stops with the test binary")
	}
	shared.motoOnce.Do(func() {
		shared.motoURL, shared.motoErr = startMoto()
	})
	if shared.motoErr != nil {
		t.Fatalf("testenv.Moto: %v", shared.motoErr)
	}
	return shared.motoURL
}

func startMoto() (string, error) {
	bin, err := tool(".venv/bin/moto_server")
	if err != nil {
		return "", err
	}
	// The port is picked before moto binds it; another process can take it in
	// between, so a failed start is retried on a fresh port.
	var lastErr error
	for range 3 {
		addr, err := freeAddr()
		if err != nil {
			return "", err
		}
		host, port, _ := strings.Cut(addr, ":")
		p, err := startProcess(exec.Command(bin, "-H", host, "-p", port))
		if err != nil {
			return "", err
		}
		url := "http://" + addr
		if lastErr = p.waitHTTP(url+"/moto-api/", 60*time.Second); lastErr == nil {
			shared.mu.Lock()
			shared.moto = p
			shared.mu.Unlock()
			return url, nil
		}
		p.stop()
	}
	return "", fmt.Errorf("starting moto_server: %w", lastErr)
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
