package latencybench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/testkit/childproc"
)

// The local server, cmd/gateway, as its own process started the way make run starts it: the
// large-body memory run (bodymem.go) and the process benchmark (process.go) both measure it so,
// because only a separate process shows what users run (the embedded store on disk, every
// feature, its own memory and CPU).

// buildGateway compiles cmd/gateway into dir and returns the binary's path. Building first,
// rather than go run, makes the process measured the gateway itself, not the go tool.
func buildGateway(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "gateway")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/secureai-gateway/gateway/cmd/gateway").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building cmd/gateway: %v\n%s", err, out)
	}
	return bin, nil
}

// serverProc is a process the benchmark started that serves HTTP on 127.0.0.1:$PORT: the
// gateway, or the floor proxy (floor.go).
type serverProc struct {
	proc    *childproc.Proc
	Base    string // http://127.0.0.1:port
	LogPath string // its stdout and stderr: the startup lines and the access log
}

// startServer runs bin on a free loopback port (PORT) and returns once it answers. env is added
// to this process's environment (and wins over it). Output goes to logPath, a file: the access
// log of a long run is large.
func startServer(ctx context.Context, bin, logPath string, env []string) (*serverProc, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	logs, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logs.Close() // the child has its own descriptor
	cmd := exec.CommandContext(ctx, bin)
	_, port, _ := net.SplitHostPort(addr)
	cmd.Env = append(append(os.Environ(), "PORT="+port), env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	p, err := childproc.Start(cmd)
	if err != nil {
		return nil, err
	}
	s := &serverProc{proc: p, Base: "http://" + addr, LogPath: logPath}
	if err := p.WaitHTTP(s.Base+"/", 60*time.Second); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%w\n%s", err, s.logTail())
	}
	return s, nil
}

// gatewayProc is a running cmd/gateway.
type gatewayProc struct {
	*serverProc
	Admin string // the bootstrap admin key's secret
}

// startGateway runs the gateway binary bin with its store in dataDir and a fresh bootstrap admin
// key (startServer says the rest).
func startGateway(ctx context.Context, bin, dataDir, logPath string, env []string) (*gatewayProc, error) {
	admin := apikey.NewSecret()
	s, err := startServer(ctx, bin, logPath, append([]string{"SECUREAI_DATA_DIR=" + dataDir, "SECUREAI_BOOTSTRAP_KEY=" + admin}, env...))
	if err != nil {
		return nil, err
	}
	return &gatewayProc{serverProc: s, Admin: admin}, nil
}

// Pid is the process's id.
func (s *serverProc) Pid() int { return s.proc.Pid() }

// Stop ends the process with SIGTERM, which the gateway handles as it does Ctrl-C (the last limit
// counts saved, the store closed), and kills it if it has not ended within 15 s.
func (s *serverProc) Stop() { s.proc.Stop(15 * time.Second) }

// logTail is the end of the process's output, for an error.
func (s *serverProc) logTail() string {
	raw, _ := os.ReadFile(s.LogPath)
	if len(raw) > 4096 {
		raw = raw[len(raw)-4096:]
	}
	return string(raw)
}

// FreeAddr is a loopback address with a port free now, for a server the benchmark starts.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// keySpec is the body of POST /admin/api-keys (keyadmin.KeyInput) as far as the benchmark sets it.
type keySpec struct {
	Name         string           `json:"name"`
	UserID       string           `json:"userId,omitempty"`
	Admin        bool             `json:"admin,omitempty"`
	DailyLimit   int              `json:"dailyLimit,omitempty"`
	MonthlyLimit int              `json:"monthlyLimit,omitempty"`
	RateLimit    apikey.RateLimit `json:"rateLimit"`
}

// maxRate is the most requests a minute and an hour an admin may grant a key.
var maxRate = apikey.RateLimit{RequestsPerMinute: apikey.MaxPerMinute, RequestsPerHour: apikey.MaxPerHour}

// createKey creates a key through the admin API with the admin key's secret and returns the new
// key's secret.
func (g *gatewayProc) createKey(admin string, spec keySpec) (string, error) {
	var out struct {
		Secret string `json:"secret"`
	}
	if err := g.adminCall(admin, http.MethodPost, "/admin/api-keys", spec, &out); err != nil {
		return "", fmt.Errorf("creating key %q: %w", spec.Name, err)
	}
	if out.Secret == "" {
		return "", fmt.Errorf("creating key %q: no secret in the answer", spec.Name)
	}
	return out.Secret, nil
}

// setPoints gives user (created if new) a monthly allowance of points.
func (g *gatewayProc) setPoints(admin, user string, points int64) error {
	body := struct {
		MonthlyPoints int64 `json:"monthlyPoints"`
	}{points}
	if err := g.adminCall(admin, http.MethodPut, "/admin/users/"+user, body, nil); err != nil {
		return fmt.Errorf("setting the points of user %s: %w", user, err)
	}
	return nil
}

// adminCall sends in as JSON and decodes a 2xx answer into out (nil: discarded); any other
// answer is an error with its status and body.
func (g *gatewayProc) adminCall(admin, method, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(method, g.Base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}
