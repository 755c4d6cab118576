package latencybench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/secureai-gateway/gateway/internal/testkit/gatewayproc"
)

// The floor is what any Go proxy costs on this machine at the moment of the run: a bare net/http
// reverse proxy (read the body, post it upstream with one shared client, copy the answer back),
// run as its own process like the gateway and measured against the same direct call in the same
// run. On an idle VM every cross-process hop may wake a halted CPU, so the same gateway build has
// measured 300–385 µs added over one day; the floor, measured beside it, tells the gateway's own
// cost from the machine's.

// FloorEnv, set to the upstream's chat URL, makes the benchmark binary serve the floor proxy on
// 127.0.0.1:$PORT instead of benchmarking (cmd/bench checks it first).
const FloorEnv = "SECUREAI_BENCH_FLOOR_UPSTREAM"

// FloorProxy is the bare proxy: the request's body posted to upstream, the answer's status,
// Content-Type and body copied back; 502 when the upstream cannot be reached.
func FloorProxy(client *http.Client, upstream string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, upstream, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
		w.WriteHeader(res.StatusCode)
		_, _ = io.Copy(w, res.Body)
	})
}

// ServeFloor serves FloorProxy in front of upstream on 127.0.0.1:port until the process is
// stopped: the benchmark binary's other mode.
func ServeFloor(port, upstream string) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}}
	return http.ListenAndServe("127.0.0.1:"+port, FloorProxy(client, upstream))
}

// startFloor runs this binary again as the floor proxy in front of upstream (its output in dir).
func startFloor(ctx context.Context, dir, upstream string) (*gatewayproc.Server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this binary to run the floor proxy: %w", err)
	}
	return gatewayproc.StartServer(ctx, self, filepath.Join(dir, "floor.log"), []string{FloorEnv + "=" + upstream})
}
