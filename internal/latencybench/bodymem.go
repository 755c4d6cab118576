package latencybench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
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
	bin := filepath.Join(dir, "gateway")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/secureai-gateway/gateway/cmd/gateway").CombinedOutput(); err != nil {
		return run, fmt.Errorf("building cmd/gateway: %v\n%s", err, out)
	}
	addr, err := freeAddr()
	if err != nil {
		return run, err
	}
	admin := apikey.NewSecret()
	cmd := exec.CommandContext(ctx, bin)
	_, port, _ := net.SplitHostPort(addr)
	cmd.Env = append(os.Environ(), "PORT="+port, "SECUREAI_DATA_DIR="+filepath.Join(dir, "data"),
		"SECUREAI_BOOTSTRAP_KEY="+admin, "SECUREAI_DEMO=true")
	cmd.Env = append(cmd.Env, cfg.Env...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &logs
	if err := cmd.Start(); err != nil {
		return run, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	base := "http://" + addr
	if err := waitListening(addr, 30*time.Second); err != nil {
		return run, fmt.Errorf("%w\n%s", err, logs.String())
	}
	// The bootstrap key is held to the default 60 requests a minute; the load gets its own key.
	secret, err := createKey(base, admin)
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
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
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
	if run.PeakRSS, err = procStatus(cmd.Process.Pid, "VmHWM"); err != nil {
		return run, err
	}
	time.Sleep(10 * time.Second)
	run.IdleRSS, err = procStatus(cmd.Process.Pid, "VmRSS")
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

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitListening(addr string, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			return c.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the gateway did not listen on %s within %s", addr, bound)
}

// createKey makes a key allowed the most requests an admin may grant.
func createKey(base, admin string) (string, error) {
	spec := fmt.Sprintf(`{"name":"bench","rateLimit":{"requestsPerMinute":%d,"requestsPerHour":%d}}`, apikey.MaxPerMinute, apikey.MaxPerHour)
	req, _ := http.NewRequest(http.MethodPost, base+"/admin/api-keys", strings.NewReader(spec))
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Secret string `json:"secret"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Secret == "" {
		return "", fmt.Errorf("creating the bench key: status %d, %v", resp.StatusCode, err)
	}
	return out.Secret, nil
}

// procStatus reads a memory line of /proc/<pid>/status ("VmHWM:  123456 kB") in bytes.
func procStatus(pid int, field string) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the server's memory needs Linux /proc: %w", err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no " + field + " in /proc status")
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
