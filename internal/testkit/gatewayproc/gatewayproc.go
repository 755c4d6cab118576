// Package gatewayproc runs the built local server, cmd/gateway, as its own process started the
// way `make run` starts it: a free loopback port, the embedded store in a directory, a bootstrap
// admin key, the output in a file. The process benchmark and the tests of the running process
// (a kill -9 and a restart, the API contract) share it; it links no package testing, so the
// benchmark can. StartServer runs any binary that serves on 127.0.0.1:$PORT the same way.
package gatewayproc

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/testkit/childproc"
)

// Build compiles cmd/gateway into dir and returns the binary's path. Building first, rather than
// go run, makes the process measured or killed the gateway itself, not the go tool.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "gateway")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/secureai-gateway/gateway/cmd/gateway").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building cmd/gateway: %v\n%s", err, out)
	}
	return bin, nil
}

// Server is a running process that serves HTTP on 127.0.0.1:$PORT.
type Server struct {
	proc    *childproc.Proc
	Addr    string // 127.0.0.1:port
	Base    string // http://127.0.0.1:port
	LogPath string // its stdout and stderr
}

// StartServer runs bin on a free loopback port (PORT) with env added to this process's
// environment (and winning over it), its output in logPath, and returns once it answers HTTP.
func StartServer(ctx context.Context, bin, logPath string, env []string) (*Server, error) {
	addr, err := childproc.FreeAddr()
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
	s := &Server{proc: p, Addr: addr, Base: "http://" + addr, LogPath: logPath}
	if err := p.WaitHTTP(s.Base+"/", 60*time.Second); err != nil {
		s.Kill()
		return nil, fmt.Errorf("%w\n%s", err, s.LogTail(4096))
	}
	return s, nil
}

// Gateway is a running cmd/gateway.
type Gateway struct {
	*Server
	Admin string // the bootstrap admin key's secret
}

// Start runs the gateway binary bin with its store in dataDir, admin as its bootstrap admin key
// ("": a new one) and env added (StartServer says the rest).
func Start(ctx context.Context, bin, dataDir, admin, logPath string, env ...string) (*Gateway, error) {
	if admin == "" {
		admin = apikey.NewSecret()
	}
	s, err := StartServer(ctx, bin, logPath, append([]string{"SECUREAI_DATA_DIR=" + dataDir, "SECUREAI_BOOTSTRAP_KEY=" + admin}, env...))
	if err != nil {
		return nil, err
	}
	return &Gateway{Server: s, Admin: admin}, nil
}

// Pid is the process's id.
func (s *Server) Pid() int { return s.proc.Pid() }

// Stop ends the process with SIGTERM, which the gateway handles as it does Ctrl-C (the last limit
// counts saved, the store closed), and kills it if it has not ended within 15 s.
func (s *Server) Stop() { s.proc.Stop(15 * time.Second) }

// Kill ends the process at once, as a crash does, and returns once it has ended.
func (s *Server) Kill() { s.proc.Kill() }

// LogTail is the last n bytes of the process's output.
func (s *Server) LogTail(n int) string {
	raw, _ := os.ReadFile(s.LogPath)
	if len(raw) > n {
		raw = raw[len(raw)-n:]
	}
	return string(raw)
}
