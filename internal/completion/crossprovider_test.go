package completion_test

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/anthropic"
	"github.com/secureai-gateway/gateway/internal/provider/gemini"
	"github.com/secureai-gateway/gateway/internal/provider/openai"
	pt "github.com/secureai-gateway/gateway/internal/provider/providertest"
)

// Issue 4: a chain across three providers, each reached through its real adapter and a fake that
// speaks its real wire format, fails over OpenAI → Anthropic → Gemini on every trigger.

const (
	gptModel    = "openai/gpt-fake"
	claudeModel = "anthropic/claude-fake"
	geminiModel = "google/gemini-fake"

	claudeText = "Served by Claude."
	geminiText = `Served by "Gemini".`
)

// The first attempt has the shortest timeouts the API accepts, so a hung OpenAI times out fast.
var chainBody = []byte(`{"models":[{"model":"` + gptModel + `","timeout_ms":1000,"first_token_timeout_ms":500},"` + claudeModel + `","` + geminiModel + `"],` +
	`"messages":[{"role":"user","content":"Hi"}]}`)

// input is body as an API surface hands it over: its chain fields read in the surface's pass.
func input(t *testing.T, body []byte, stream bool) completion.Input {
	t.Helper()
	spec, err := chain.ParseSpec(body)
	if err != nil {
		t.Fatal(err)
	}
	return completion.Input{Body: body, Chain: spec, Stream: stream}
}

// fakes are the three upstreams of one case.
type fakes struct {
	openai, anthropic, gemini *pt.Server
}

// newService routes the catalog's three models to the fakes; with the refused fault OpenAI's base URL is
// a port nothing listens on.
func newService(t *testing.T, openaiFault, anthropicFault pt.Fault) (*completion.Service, fakes) {
	t.Helper()
	f := fakes{
		openai:    pt.New(t, pt.OpenAI.Handler(openaiFault, "Served by GPT.")),
		anthropic: pt.New(t, pt.Anthropic.Handler(anthropicFault, claudeText)),
		gemini:    pt.New(t, pt.Gemini.Handler(pt.Serve, geminiText)),
	}
	openaiURL := f.openai.URL + "/v1"
	if openaiFault == refused {
		openaiURL = closedPort(t)
	}
	cat := &catalog.Catalog{
		Providers: map[string]catalog.ProviderConfig{
			// All opt in to entitlement tokens; only a service with a minter sends any.
			"openai":    {Type: "openai", BaseURL: openaiURL, APIKeyEnv: "OPENAI_KEY", ReceiveEntitlement: true},
			"anthropic": {Type: "anthropic", BaseURL: f.anthropic.URL, APIKeyEnv: "ANTHROPIC_KEY", ReceiveEntitlement: true},
			"google":    {Type: "gemini", BaseURL: f.gemini.URL, APIKeyEnv: "GEMINI_KEY", ReceiveEntitlement: true},
		},
		Models: map[string]*catalog.Model{
			gptModel:    {Name: gptModel, Provider: "openai", Upstream: "gpt-fake"},
			claudeModel: {Name: claudeModel, Provider: "anthropic", Upstream: "claude-fake"},
			geminiModel: {Name: geminiModel, Provider: "google", Upstream: "gemini-fake"},
		},
	}
	factories := map[string]catalog.Factory{"openai": openai.New, "anthropic": anthropic.New, "gemini": gemini.New}
	router, err := catalog.NewRouter(cat, factories, func(string) string { return "test-key" }, provider.NewHTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	return &completion.Service{Router: router, Settings: chain.ProjectSettings}, f
}

// refused stands for OpenAI's endpoint refusing the connection: no fake answers at all.
const refused pt.Fault = "connection refused"

func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr + "/v1"
}

// run sends the chain plainly or streamed and returns the served content, the report and the
// error; content is checked to be in OpenAI's shape on the way.
func run(t *testing.T, svc *completion.Service, stream bool) (string, string, chain.Report, error) {
	t.Helper()
	ctx := identity.WithKey(pt.WithTimeout(t, 20*time.Second), &apikey.Key{})
	call, err := svc.Open(ctx, input(t, chainBody, stream))
	if err != nil {
		t.Fatal(err)
	}
	if !stream {
		c, report, err := call.Complete(ctx)
		if err != nil {
			return "", "", report, err
		}
		b := gjson.ParseBytes(c.Response.Body)
		if b.Get("object").String() != "chat.completion" || b.Get("choices.0.message.role").String() != "assistant" || b.Get("choices.0.finish_reason").String() != "stop" {
			t.Errorf("not a chat.completion: %s", c.Response.Body)
		}
		return b.Get("choices.0.message.content").String(), c.Served, report, nil
	}
	st, report, err := call.Stream(ctx)
	if err != nil {
		return "", "", report, err
	}
	defer st.Close()
	var text, finish string
	for {
		c, err := st.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("stream broke after it was served: %v", err)
		}
		if gjson.GetBytes(c.Data, "object").String() != "chat.completion.chunk" {
			t.Errorf("not a chat.completion.chunk: %s", c.Data)
		}
		text += gjson.GetBytes(c.Data, "choices.0.delta.content").String()
		if f := gjson.GetBytes(c.Data, "choices.0.finish_reason"); f.Type == gjson.String {
			finish = f.Str
		}
	}
	if finish != "stop" {
		t.Errorf("finish_reason = %q, want stop", finish)
	}
	return text, st.Served, report, nil
}

// wantAttempts compares the report's attempts by model, status and reason; latencies are left
// loose for a busy machine, except that a timed-out attempt cannot have been quicker than its
// timeout.
func wantAttempts(t *testing.T, got chain.Report, want ...chain.Attempt) {
	t.Helper()
	if len(got.Attempts) != len(want) || !got.Occurred {
		t.Fatalf("attempts = %+v (occurred %v), want %+v", got.Attempts, got.Occurred, want)
	}
	for i, w := range want {
		a := got.Attempts[i]
		if a.Model != w.Model || a.Status != w.Status || a.Reason != w.Reason {
			t.Errorf("attempt %d = %+v, want %+v", i, a, w)
		}
		if a.Reason == chain.Timeout && a.LatencyMS < 400 {
			t.Errorf("attempt %d timed out after only %d ms", i, a.LatencyMS)
		}
	}
}

func failed(model string, r chain.Reason) chain.Attempt {
	return chain.Attempt{Model: model, Status: chain.Failed, Reason: r}
}

func served(model string) chain.Attempt { return chain.Attempt{Model: model, Status: chain.Served} }

func TestCrossProviderChainFailsOverToGemini(t *testing.T) {
	cases := []struct {
		name                        string
		openai, anthropic           pt.Fault
		openaiWhy, anthropicWhy     chain.Reason
		openaiCalls, anthropicCalls int
	}{
		{"openai connection refused, anthropic 503", refused, pt.Unavailable, chain.ConnectionError, chain.ServerError, 0, 1},
		{"openai 503, anthropic 429", pt.Unavailable, pt.RateLimited, chain.ServerError, chain.RateLimit, 1, 1},
		{"openai 429, anthropic reset before headers", pt.RateLimitedRetryAfter, pt.Reset, chain.RateLimit, chain.ConnectionError, 1, 1},
		{"openai hangs to its timeout, anthropic cut mid-answer", pt.Hung, pt.CutMidStream, chain.Timeout, chain.ConnectionError, 1, 1},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			name := tc.name + "/plain"
			if stream {
				name = tc.name + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				svc, f := newService(t, tc.openai, tc.anthropic)
				text, servedBy, report, err := run(t, svc, stream)
				if err != nil {
					t.Fatalf("chain failed: %v (attempts %+v)", err, report.Attempts)
				}
				wantAttempts(t, report, failed(gptModel, tc.openaiWhy), failed(claudeModel, tc.anthropicWhy), served(geminiModel))
				if servedBy != geminiModel || text != geminiText {
					t.Errorf("served by %s: %q, want %s: %q", servedBy, text, geminiModel, geminiText)
				}
				if f.openai.Calls() != tc.openaiCalls || f.anthropic.Calls() != tc.anthropicCalls || f.gemini.Calls() != 1 {
					t.Errorf("calls openai %d anthropic %d gemini %d", f.openai.Calls(), f.anthropic.Calls(), f.gemini.Calls())
				}
			})
		}
	}
}

func TestCrossProviderChainServedByAnthropic(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(t *testing.T) {
			svc, f := newService(t, pt.Unavailable, pt.Serve)
			text, servedBy, report, err := run(t, svc, stream)
			if err != nil {
				t.Fatal(err)
			}
			wantAttempts(t, report, failed(gptModel, chain.ServerError), served(claudeModel))
			if servedBy != claudeModel || text != claudeText || f.gemini.Calls() != 0 {
				t.Errorf("served by %s: %q; gemini called %d times", servedBy, text, f.gemini.Calls())
			}
		})
	}
}

// A final error is the request's own fault: no other model would do better, so the chain stops
// there and Gemini is never called.
func TestCrossProviderChainStopsAtAnthropicsContextTooLong(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(t *testing.T) {
			svc, f := newService(t, pt.RateLimited, pt.ContextTooLong)
			_, _, report, err := run(t, svc, stream)
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Reason != "" || pe.Status != 400 || pe.Code != "context_length_exceeded" {
				t.Fatalf("err = %v, want Anthropic's final context_length_exceeded", err)
			}
			wantAttempts(t, report, failed(gptModel, chain.RateLimit), failed(claudeModel, chain.Rejected))
			if f.gemini.Calls() != 0 {
				t.Errorf("gemini called %d times after a final error", f.gemini.Calls())
			}
		})
	}
}
