package testenv

import (
	"os/exec"
	"testing"

	"github.com/secureai-gateway/gateway/internal/testkit/childproc"
)

// serialMoto serves moto's whole backend (DomainDispatcherApplication, as moto_server does) on a
// werkzeug server with threaded=False: one request at a time.
const serialMoto = `import sys
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple
run_simple(sys.argv[1], int(sys.argv[2]), DomainDispatcherApplication(create_backend_app), threaded=False)
`

// MotoSerial returns the endpoint of the test binary's single-threaded moto server, starting it
// on first use. moto_server (Moto) handles requests on threads without locking, so concurrent
// conditional writes can lose updates (getmoto/moto#7166) where DynamoDB would not; served one
// request at a time, every request is atomic as in DynamoDB, and a client-side read-then-write
// race still shows. Concurrency contract tests use this one; it is slower, so the rest use Moto.
// State persists across the binary's tests like Moto's.
func MotoSerial(t testing.TB) string {
	t.Helper()
	requireMain(t, "MotoSerial")
	shared.serialOnce.Do(func() {
		var p *childproc.Proc
		shared.serialURL, p, shared.serialErr = startMoto(".venv/bin/python", func(bin, host, port string) *exec.Cmd {
			return exec.Command(bin, "-c", serialMoto, host, port)
		})
		shared.mu.Lock()
		shared.serial = p
		shared.mu.Unlock()
	})
	if shared.serialErr != nil {
		t.Fatalf("testenv.MotoSerial: %v", shared.serialErr)
	}
	return shared.serialURL
}
