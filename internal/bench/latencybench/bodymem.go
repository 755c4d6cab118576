package latencybench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/secureai-gateway/gateway/internal/testkit/gatewayproc"
)

// TargetBodyPeakRSS is issue 12 item 3's bound on the server's peak memory at 100 x 7 MB.
const TargetBodyPeakRSS = 400 << 20

// BodyMemConfig is a large-body load on the local server, as issue 12 item 3 measured it:
// Requests concurrent requests of Size bytes each to /v1/chat/completions (model demo/ok).
type BodyMemConfig struct {
	Requests int
	Size     int
	// Env is added to the server's environment, e.g. SECUREAI_MAX_INFLIGHT_BODY_BYTES.
	Env []string
}

// BodyMemRun is what the load cost the server process.
type BodyMemRun struct {
	Config   BodyMemConfig
	Statuses map[int]int // answers by HTTP status; 0 counts transport errors
	Took     time.Duration
	PeakRSS  int64 // bytes: the process's high-water mark (VmHWM) over its whole life
	IdleRSS  int64 // bytes: resident 10 s after the last answer
}

// BodyMemory builds cmd/gateway, runs it as the local server runs (its own process, embedded
// store, demo provider, the server's body limits), sends the load and reads the process's peak
// resident memory from /proc (Linux only). Measuring a separate process keeps the client's own
// bodies out of the figure.
func BodyMemory(ctx context.Context, cfg BodyMemConfig) (BodyMemRun, error) {
	run := BodyMemRun{Config: cfg, Statuses: map[int]int{}}
	dir, err := os.MkdirTemp("", "secureai-bodymem-")
	if err != nil {
		return run, err
	}
	defer os.RemoveAll(dir)
	bin, err := gatewayproc.Build(ctx, dir)
	if err != nil {
		return run, err
	}
	g, err := startGateway(ctx, bin, filepath.Join(dir, "data"), filepath.Join(dir, "gateway.log"), append([]string{"SECUREAI_DEMO=true"}, cfg.Env...))
	if err != nil {
		return run, err
	}
	defer g.Stop()
	// The bootstrap key is held to the default 60 requests a minute; the load gets its own key.
	secret, err := g.createKey(g.Admin, keySpec{Name: "bench", RateLimit: maxRate})
	if err != nil {
		return run, err
	}

	body := largeBody(cfg.Size)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Requests}, Timeout: 5 * time.Minute}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.Requests {
		wg.Go(func() {
			status := 0
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.Base+"/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+secret)
			req.Header.Set("Content-Type", "application/json")
			if resp, err := client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				status = resp.StatusCode
			}
			mu.Lock()
			run.Statuses[status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	run.Took = time.Since(start)
	if run.PeakRSS, err = procStatus(g.Pid(), "VmHWM"); err != nil {
		return run, err
	}
	time.Sleep(10 * time.Second)
	run.IdleRSS, err = procStatus(g.Pid(), "VmRSS")
	return run, err
}

// largeBody is a chat request whose single message makes it size bytes.
func largeBody(size int) []byte {
	const head, tail = `{"model":"demo/ok","messages":[{"role":"user","content":"`, `"}]}`
	b := make([]byte, 0, size)
	b = append(b, head...)
	b = append(b, bytes.Repeat([]byte("lorem ipsum "), max(size-len(head)-len(tail), 0)/12)...)
	return append(b, tail...)
}

// ReportBodyMemory prints the runs as a table.
func ReportBodyMemory(w io.Writer, runs []BodyMemRun) {
	fmt.Fprintln(w, "\nLarge request bodies on the local server (its own process; peak = VmHWM):")
	fmt.Fprintln(w, "| requests x size | server env | answers | took | peak RSS | RSS 10 s later |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|")
	for _, r := range runs {
		env := strings.Join(r.Config.Env, " ")
		if env == "" {
			env = "defaults"
		}
		fmt.Fprintf(w, "| %d x %.1f MB | %s | %s | %s | **%d MB** | %d MB |\n", r.Config.Requests, float64(r.Config.Size)/1e6, env,
			statuses(r.Statuses), r.Took.Round(100*time.Millisecond), r.PeakRSS>>20, r.IdleRSS>>20)
	}
}

func statuses(m map[int]int) string {
	var parts []string
	for _, s := range []int{200, 503, 429, 413, 0} {
		if n := m[s]; n > 0 {
			name := strconv.Itoa(s)
			if s == 0 {
				name = "no answer"
			}
			parts = append(parts, fmt.Sprintf("%d× %s", n, name))
		}
	}
	for s, n := range m {
		if s != 200 && s != 503 && s != 429 && s != 413 && s != 0 {
			parts = append(parts, fmt.Sprintf("%d× %d", n, s))
		}
	}
	return strings.Join(parts, ", ")
}
