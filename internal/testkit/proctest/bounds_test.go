package proctest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
)

// do sends a request with the key secret and returns the answer's status and body.
func (s *server) do(t *testing.T, secret, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.Base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: clientBound}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

// wantParam asserts an answer of /v1 is a 400 whose OpenAI envelope names param (error.param).
func wantParam(t *testing.T, what string, status int, body, param string) {
	t.Helper()
	var e struct {
		Error struct{ Param string } `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &e)
	if status != http.StatusBadRequest || e.Error.Param != param {
		t.Errorf("%s: status %d, body %.300s; want a 400 naming %q", what, status, body, param)
	}
}

// Issue 34.3 through the built server: with a provider that admits any model name, a name too
// long or with characters outside the bound is a 400 naming the field, and distinct names do not
// add series to /metrics (they are counted as loose/other).
func TestAnyModelNamesAreBoundedAndAddNoSeries(t *testing.T) {
	upstream := httptest.NewServer(openaifake.New(0))
	t.Cleanup(upstream.Close)
	config := filepath.Join(t.TempDir(), "catalog.json")
	overlay := fmt.Sprintf(`{"providers":{"loose":{"type":"openai","base_url":%q,"any_model":true}}}`, upstream.URL+"/v1")
	if err := os.WriteFile(config, []byte(overlay), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := apikey.NewSecret()
	s := start(t, build(t), t.TempDir(), secret, "SECUREAI_CONFIG="+config)
	chat := func(chain string) (int, string) {
		return s.do(t, secret, http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],`+chain+`}`)
	}

	for what, name := range map[string]string{
		"a megabyte": "loose/" + strings.Repeat("a", 1<<20),
		"a NUL":      "loose/a\x00b",
		"a U+202E":   "loose/\u202etxt.exe",
	} {
		q, _ := json.Marshal(name)
		for _, tc := range []struct{ chain, param string }{
			{`"model":` + string(q), "model"},
			{`"models":["demo/ok",` + string(q) + `]`, "models[1]"},
			{`"model":"demo/ok","fallback_models":[` + string(q) + `]`, "fallback_models[0]"},
		} {
			status, body := chat(tc.chain)
			wantParam(t, what+" in "+tc.param, status, body, tc.param)
		}
	}

	// The fake serves "slow-first-token-<ms>" under any delay: distinct names, each served.
	series := func() (n int, text string) {
		status, body := s.do(t, secret, http.MethodGet, "/metrics", "")
		if status != http.StatusOK {
			t.Fatalf("GET /metrics: %d %.300s", status, body)
		}
		for l := range strings.Lines(body) {
			if strings.HasPrefix(l, "secureai_") {
				n++
			}
		}
		return n, body
	}
	serve := func(from, to int) {
		for i := from; i <= to; i++ {
			if status, body := chat(fmt.Sprintf(`"model":"loose/%s%d"`, openaifake.SlowPrefix, i)); status != http.StatusOK {
				t.Fatalf("loose/%s%d: %d %.300s", openaifake.SlowPrefix, i, status, body)
			}
		}
	}
	serve(1, 5)
	before, text := series()
	serve(6, 15)
	after, _ := series()
	if after != before {
		t.Errorf("10 more distinct any_model names took /metrics from %d to %d series", before, after)
	}
	if !strings.Contains(text, `model="loose/other"`) || strings.Contains(text, openaifake.SlowPrefix) {
		t.Errorf("/metrics has no loose/other series, or names a model outside the catalog:\n%.3000s", text)
	}
}

// Issue 34.4 through the built server: a request for several answers is a 400 naming the field
// on both chat surfaces, and n: 1 is served.
func TestSeveralAnswersAreRefused(t *testing.T) {
	secret := apikey.NewSecret()
	s := start(t, build(t), t.TempDir(), secret)
	const msgs = `"model":"demo/ok","messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct{ body, param string }{
		{`{` + msgs + `,"n":2}`, "n"},
		{`{` + msgs + `,"n":1,"best_of":3}`, "best_of"},
	} {
		status, body := s.do(t, secret, http.MethodPost, "/v1/chat/completions", tc.body)
		wantParam(t, tc.body, status, body, tc.param)
	}
	if status, body := s.do(t, secret, http.MethodPost, "/v1/chat/completions", `{`+msgs+`,"n":1}`); status != http.StatusOK {
		t.Errorf("n: 1: %d %.300s; want it served", status, body)
	}
	status, body := s.do(t, secret, http.MethodPost, "/chat/completions", `{"index":"Zero-Knowledge",`+msgs+`,"n":2}`)
	if status != http.StatusBadRequest || !strings.Contains(body, `"message":"n: `) {
		t.Errorf("classic n: 2: %d %.300s; want a 400 naming n", status, body)
	}
}
