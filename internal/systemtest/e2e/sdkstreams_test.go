package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// The official SDKs parse the agent surfaces' streams: anthropic-python's messages.stream and
// openai-python's responses.stream (pinned in requirements-test.txt, installed into .venv by
// `make test-tools`), on passed-through and translated streams, after a failover, and on a stream
// broken after its first content, which must raise rather than look complete.

// sdkCase is one stream a script parses, and what the SDK made of it.
type sdkCase struct {
	Name      string         `json:"name"`
	Model     string         `json:"model"`
	ExtraBody map[string]any `json:"extra_body,omitempty"`
}

type sdkResult struct {
	Name         string          `json:"name"`
	Streamed     string          `json:"streamed"`
	Text         string          `json:"text"`
	Model        string          `json:"model"`
	StopReason   string          `json:"stop_reason"`
	Status       string          `json:"status"`
	OutputTokens int             `json:"output_tokens"`
	Blocks       []string        `json:"blocks"`
	Signatures   []string        `json:"signatures"`
	Events       []string        `json:"events"`
	Secureai     json.RawMessage `json:"secureai"`
	Error        string          `json:"error"`
	Message      string          `json:"message"`
}

// sdkBound bounds one script's run: its cases take well under a second each.
const sdkBound = 60 * time.Second

// runSDK runs testdata/script with the checkout's .venv against e and returns its results by case.
func runSDK(t *testing.T, e *env, script string, cases []sdkCase) map[string]sdkResult {
	t.Helper()
	py := testenv.Tool(t, ".venv/bin/python")
	arg, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	path, err := filepath.Abs(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), sdkBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, path, string(arg))
	// Only loopback is reachable: every proxy points at a closed port, the gateway is exempt.
	proxy := "http://" + closedPort(t)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1",
		"GATEWAY_URL=" + e.url, "GATEWAY_KEY=" + e.secret,
		"HTTPS_PROXY=" + proxy, "HTTP_PROXY=" + proxy, "ALL_PROXY=" + proxy, "https_proxy=" + proxy, "http_proxy=" + proxy, "all_proxy=" + proxy,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if strings.Contains(stderr.String(), "ModuleNotFoundError") {
		t.Fatalf("an SDK is missing from .venv: `make test-tools` installs requirements-test.txt\n%s", stderr.String())
	}
	if err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", script, err, out, stderr.String())
	}
	var results []sdkResult
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("%s printed no results: %v\n%s\nstderr:\n%s", script, err, out, stderr.String())
	}
	byName := map[string]sdkResult{}
	for _, r := range results {
		byName[r.Name] = r
	}
	if len(byName) != len(cases) {
		t.Fatalf("%d results for %d cases: %s", len(byName), len(cases), out)
	}
	return byName
}

// fallback is the extra body member an SDK sends for the chain.
func fallback(models ...string) map[string]any { return map[string]any{"fallback_models": models} }

// reportSays checks the secureai report an SDK kept: the served model and the attempts.
func reportSays(t *testing.T, name string, raw json.RawMessage, served string, attempts []attempt) {
	t.Helper()
	if len(raw) == 0 || string(raw) == "null" {
		t.Errorf("%s: the SDK kept no secureai report", name)
		return
	}
	var rep struct {
		Served   string `json:"served_model"`
		Failover *struct {
			Occurred bool `json:"occurred"`
			Attempts []struct {
				Model, Status, Reason string
			} `json:"attempts"`
		} `json:"failover"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Errorf("%s: secureai %s: %v", name, raw, err)
		return
	}
	if rep.Served != served {
		t.Errorf("%s: secureai.served_model %q, want %q", name, rep.Served, served)
	}
	if attempts == nil {
		return
	}
	var got []attempt
	if rep.Failover != nil {
		for _, a := range rep.Failover.Attempts {
			got = append(got, attempt{Model: a.Model, Status: a.Status, Reason: a.Reason})
		}
	}
	if !equalAttempts(got, attempts) {
		t.Errorf("%s: the report's attempts %+v, want %+v", name, got, attempts)
	}
}

func TestAnthropicSDKParsesMessagesStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := runSDK(t, e, "anthropic_streams.py", []sdkCase{
		{Name: "passthrough", Model: "anth/ok"},
		{Name: "passthrough-thinking", Model: "anth/thinking"},
		{Name: "passthrough-after-error-event", Model: "anth/" + anthEventBefore, ExtraBody: fallback("anth/ok")},
		{Name: "translated", Model: "fake/ok"},
		{Name: "translated-after-529", Model: "anth/overloaded", ExtraBody: fallback("fake/ok")},
		{Name: "truncated-passthrough", Model: "anth/" + anthEventAfter},
		{Name: "truncated-translated", Model: "fake/cut"},
	})
	for _, tc := range []struct {
		name, served string
		attempts     []attempt
		blocks       string
	}{
		{"passthrough", "anth/ok", nil, "text"},
		{"passthrough-thinking", "anth/thinking", nil, "thinking,text"},
		{"passthrough-after-error-event", "anth/ok", []attempt{failed("anth/"+anthEventBefore, "server_error"), served("anth/ok")}, "text"},
		{"translated", "fake/ok", nil, "text"},
		{"translated-after-529", "fake/ok", []attempt{failed("anth/overloaded", "server_error"), served("fake/ok")}, "text"},
	} {
		r := res[tc.name]
		if r.Error != "" {
			t.Errorf("%s: the SDK raised %s: %s", tc.name, r.Error, r.Message)
			continue
		}
		if r.Text != openaifake.Answer || r.Streamed != r.Text || r.StopReason != "end_turn" || r.Model != tc.served || r.OutputTokens <= 0 {
			t.Errorf("%s: text %q (streamed %q) stop_reason %q model %q output_tokens %d; want %s's whole answer",
				tc.name, r.Text, r.Streamed, r.StopReason, r.Model, r.OutputTokens, tc.served)
		}
		if got := strings.Join(r.Blocks, ","); got != tc.blocks {
			t.Errorf("%s: content blocks %s, want %s", tc.name, got, tc.blocks)
		}
		reportSays(t, tc.name, r.Secureai, tc.served, tc.attempts)
	}
	if s := res["passthrough-thinking"].Signatures; len(s) != 1 || s[0] != "c2lnbmF0dXJl" {
		t.Errorf("the thinking block's signature came through as %q", s)
	}
	for _, name := range []string{"truncated-passthrough", "truncated-translated"} {
		if r := res[name]; r.Error == "" || !strings.Contains(strings.ToLower(r.Message), "overloaded") {
			t.Errorf("%s: a stream broken after its first content must raise the error event (overloaded_error); the SDK gave %+v", name, r)
		}
	}
}

func TestOpenAISDKParsesResponsesStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := runSDK(t, e, "openai_responses_streams.py", []sdkCase{
		{Name: "passthrough", Model: "resp/ok"},
		{Name: "passthrough-after-failed", Model: "resp/" + respFailedBefore, ExtraBody: fallback("resp/ok")},
		{Name: "translated", Model: "fake/ok"},
		{Name: "translated-from-anthropic", Model: "anth/ok"},
		{Name: "translated-after-failed", Model: "resp/" + respFailedBefore, ExtraBody: fallback("fake/ok")},
		{Name: "truncated-passthrough", Model: "resp/" + respFailedAfter},
		{Name: "truncated-translated", Model: "fake/cut"},
	})
	for _, tc := range []struct {
		name, served string
		attempts     []attempt
	}{
		{"passthrough", "resp/ok", nil},
		{"passthrough-after-failed", "resp/ok", []attempt{failed("resp/"+respFailedBefore, "server_error"), served("resp/ok")}},
		{"translated", "fake/ok", nil},
		{"translated-from-anthropic", "anth/ok", nil},
		{"translated-after-failed", "fake/ok", []attempt{failed("resp/"+respFailedBefore, "server_error"), served("fake/ok")}},
	} {
		r := res[tc.name]
		if r.Error != "" {
			t.Errorf("%s: the SDK raised %s: %s (events %v)", tc.name, r.Error, r.Message, r.Events)
			continue
		}
		if r.Text != openaifake.Answer || r.Streamed != r.Text || r.Status != "completed" || r.Model != tc.served || r.OutputTokens <= 0 {
			t.Errorf("%s: text %q (streamed %q) status %q model %q output_tokens %d; want %s's whole answer",
				tc.name, r.Text, r.Streamed, r.Status, r.Model, r.OutputTokens, tc.served)
		}
		if n := len(r.Events); n == 0 || r.Events[0] != "response.created" || r.Events[n-1] != "response.completed" {
			t.Errorf("%s: events %v, want response.created … response.completed", tc.name, r.Events)
		}
		reportSays(t, tc.name, r.Secureai, tc.served, tc.attempts)
	}
	for _, name := range []string{"truncated-passthrough", "truncated-translated"} {
		// The SDK reads the whole stream, the gateway's response.failed last, and refuses a final
		// response that never completed.
		r := res[name]
		n := len(r.Events)
		if r.Error != "RuntimeError" || !strings.Contains(r.Message, "response.completed") || n == 0 || r.Events[n-1] != "response.failed" {
			t.Errorf("%s: a stream broken after its first content must end with response.failed and no final response; the SDK gave %s %q after %v",
				name, r.Error, r.Message, r.Events)
		}
	}
}
