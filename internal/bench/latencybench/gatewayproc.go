package latencybench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewayproc"
)

// The local server, cmd/gateway, as its own process started the way make run starts it
// (internal/testkit/gatewayproc): the large-body memory run (bodymem.go) and the process
// benchmark (process.go) both measure it so, because only a separate process shows what users run
// (the embedded store on disk, every feature, its own memory and CPU).

// gatewayProc is a running cmd/gateway the benchmark talks to through its admin API.
type gatewayProc struct {
	*gatewayproc.Gateway
}

// startGateway runs the gateway binary bin with its store in dataDir, a fresh bootstrap admin key
// and env added.
func startGateway(ctx context.Context, bin, dataDir, logPath string, env []string) (*gatewayProc, error) {
	g, err := gatewayproc.Start(ctx, bin, dataDir, "", logPath, env...)
	if err != nil {
		return nil, err
	}
	return &gatewayProc{g}, nil
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
