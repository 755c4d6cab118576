package proctest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
)

// call sends one request with the admin key and returns the status and body.
func (s *server) call(secret, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, s.Base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: clientBound}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// Rule (issue 17.2): the local store writes a request's charge, receipt and audit entries behind
// the answer, so a kill -9 under load loses at most the last commit interval's writes — and never
// bills twice. After a restart on the same store the user has been charged no more than the
// requests it sent (each demo answer costs one point), something was kept, and every bundle id
// answered before the kill either has its receipt or gets a 404 that says it may have been lost.
func TestKillUnderLoadNeverDoubleBills(t *testing.T) {
	bin := build(t)
	dataDir := t.TempDir()
	secret := apikey.NewSecret()
	// The check reads back every receipt: more than a key's default read budget a minute.
	const readBudget = "SECUREAI_READ_BUDGET_PER_MINUTE=100000"
	first := start(t, bin, dataDir, secret, readBudget)
	status, body, err := first.call(secret, http.MethodPost, "/admin/api-keys",
		`{"name":"load","userId":"load","dailyLimit":1000000,"monthlyLimit":1000000,"rateLimit":{"requestsPerMinute":1000,"requestsPerHour":10000}}`)
	var created struct {
		Secret string `json:"secret"`
	}
	if err != nil || status != http.StatusCreated || json.Unmarshal(body, &created) != nil {
		t.Fatalf("creating the load key: %d %s %v", status, body, err)
	}
	if status, body, err := first.call(secret, http.MethodPut, "/admin/users/load", `{"monthlyPoints":1000000}`); err != nil || status != http.StatusOK {
		t.Fatalf("raising the load user's points: %d %s %v", status, body, err)
	}

	// Paced under the key's 1000 requests a minute: a refusal here would be a limit, not a crash.
	const workers, pause = 2, 5 * time.Millisecond
	var (
		mu      sync.Mutex
		bundles []string
		sent    int // requests started, answered or not: the most the user may be charged for
		wg      sync.WaitGroup
	)
	stop := make(chan struct{})
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				sent++
				mu.Unlock()
				time.Sleep(pause)
				status, body, err := first.call(created.Secret, http.MethodPost, "/v1/chat/completions",
					`{"model":"demo/ok","messages":[{"role":"user","content":"Hello"}]}`)
				if err != nil {
					return // the kill cut it
				}
				var out struct {
					SecureAI struct {
						BundleID string `json:"smltp_bundle_id"`
					} `json:"secureai"`
				}
				if status != http.StatusOK || json.Unmarshal(body, &out) != nil || out.SecureAI.BundleID == "" {
					t.Errorf("before the kill: %d %s, want a 200 with a bundle id", status, body)
					return
				}
				mu.Lock()
				bundles = append(bundles, out.SecureAI.BundleID)
				mu.Unlock()
			}
		})
	}
	time.Sleep(1500 * time.Millisecond) // several commit intervals of load
	first.Kill()                        // SIGKILL, as a crash
	close(stop)
	wg.Wait()
	if len(bundles) == 0 {
		t.Fatal("no request was answered before the kill; the test proves nothing")
	}

	second := start(t, bin, dataDir, secret, readBudget)
	status, body, err = second.call(secret, http.MethodGet, "/admin/users/load", "")
	var user struct {
		User struct {
			Points struct {
				Used int `json:"used"`
			} `json:"points"`
		} `json:"user"`
	}
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &user) != nil {
		t.Fatalf("reading the user after the restart: %d %s %v", status, body, err)
	}
	used := user.User.Points.Used
	if used > sent {
		t.Errorf("after the kill the user was charged %d points for %d requests sent: billed twice", used, sent)
	}
	if used == 0 {
		t.Errorf("after %d answers over 1.5 s nothing was kept: the store never committed", len(bundles))
	}

	kept := 0
	for _, id := range bundles {
		status, body, err := second.call(created.Secret, http.MethodGet, "/receipts/"+id, "")
		switch {
		case err != nil:
			t.Fatal(err)
		case status == http.StatusOK:
			kept++
		case status == http.StatusNotFound && strings.Contains(string(body), "may have been lost"):
		default:
			t.Errorf("receipt %s after the restart: %d %s; want 200, or a 404 saying it may have been lost", id, status, body)
		}
	}
	if kept == 0 {
		t.Errorf("none of the %d receipts answered before the kill was kept", len(bundles))
	}
	t.Logf("%d requests sent, %d answered before the kill; after the restart %d points charged and %d receipts kept",
		sent, len(bundles), used, kept)
}

// Rule (issue 21 item 1): a reservation whose request never settles — the server was killed
// while it ran — is refunded once its deadline and the hold margin have passed, by the sweep the
// restarted server runs at start; /usage shows the points back.
func TestAKilledRequestsReservationIsRefunded(t *testing.T) {
	bin := build(t)
	dataDir := t.TempDir()
	secret := apikey.NewSecret()
	env := []string{"SECUREAI_REQUEST_TIMEOUT=3s", "SECUREAI_HOLD_MARGIN=1s"}
	first := start(t, bin, dataDir, secret, env...)
	status, body, err := first.call(secret, http.MethodPost, "/admin/api-keys", `{"name":"held","userId":"held"}`)
	var created struct {
		Secret string `json:"secret"`
	}
	if err != nil || status != http.StatusCreated || json.Unmarshal(body, &created) != nil {
		t.Fatalf("creating the key: %d %s %v", status, body, err)
	}
	used := func(s *server) int {
		t.Helper()
		status, body, err := s.call(created.Secret, http.MethodGet, "/usage", "")
		var u struct {
			Points struct {
				Used int `json:"used"`
			} `json:"points"`
		}
		if err != nil || status != http.StatusOK || json.Unmarshal(body, &u) != nil {
			t.Fatalf("GET /usage: %d %s %v", status, body, err)
		}
		return u.Points.Used
	}

	began := time.Now()
	go func() { // never answered: demo/hang holds it until the kill
		_, _, _ = first.call(created.Secret, http.MethodPost, "/v1/chat/completions", `{"model":"demo/hang","messages":[{"role":"user","content":"Hello"}]}`)
	}()
	for used(first) == 0 {
		if time.Since(began) > 2*time.Second {
			t.Fatal("the request's reservation was never held")
		}
		time.Sleep(20 * time.Millisecond)
	}
	held := used(first)
	time.Sleep(500 * time.Millisecond) // past the store's commit interval: the hold is on disk
	first.Kill()                       // SIGKILL, as a crash
	// Past the request's deadline (3 s) and the margin (1 s): the restarted server's first sweep
	// refunds it.
	time.Sleep(time.Until(began.Add(4500 * time.Millisecond)))
	second := start(t, bin, dataDir, secret, env...)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := used(second)
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart %d points are still held (%d before the kill), want them refunded", n, held)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
