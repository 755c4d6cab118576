package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
	"github.com/tidwall/gjson"
)

// tokens are the 60 tokens of the whole answer.
func tokens(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "t%d ", i)
	}
	return b.String()
}

// resumeUpstream streams the first 40 tokens of the answer and then breaks (cut, stall or a
// malformed chunk), or — model "cont" — continues from exactly the 40 tokens it must be handed as
// the assistant's prefix, with the remaining 20; "refuse" refuses the continuation.
type resumeUpstream struct {
	continuations chan []byte // every continuation request body, as received
}

func (u *resumeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	model := gjson.GetBytes(body, "model").String()
	flusher := w.(http.Flusher)
	chunk := func(id, delta string) {
		fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", id, model, delta)
		flusher.Flush()
	}
	switch model {
	case "cont", "refuse":
		u.continuations <- body
		if model == "refuse" {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":{"message":"assistant prefill is not supported","type":"invalid_request_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk("chatcmpl-cont", `{"role":"assistant","content":""}`)
		for i := 40; i < 60; i++ {
			chunk("chatcmpl-cont", fmt.Sprintf(`{"content":"t%d "}`, i))
		}
		fmt.Fprint(w, "data: {\"id\":\"chatcmpl-cont\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"cont\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: {\"id\":\"chatcmpl-cont\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"cont\",\"choices\":[],\"usage\":{\"prompt_tokens\":70,\"completion_tokens\":20,\"total_tokens\":90}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk("chatcmpl-first", `{"role":"assistant","content":""}`)
	for i := range 40 {
		chunk("chatcmpl-first", fmt.Sprintf(`{"content":"t%d "}`, i))
	}
	switch model {
	case "stall":
		<-r.Context().Done()
	case "malformed":
		fmt.Fprint(w, "data: {\"id\":\"chatcmpl-first\",\"choices\":[{\"delta\":\n\n")
		flusher.Flush()
	case "tool":
		chunk("chatcmpl-first", `{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}`)
	}
	// "cut" (and the others once broken): the connection ends with no finish and no [DONE].
}

func newResumeGateway(t *testing.T) (string, *resumeUpstream) {
	t.Helper()
	up := &resumeUpstream{continuations: make(chan []byte, 4)}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	cat := &catalog.Catalog{Providers: map[string]catalog.ProviderConfig{"p": {Type: "openai", BaseURL: srv.URL + "/v1"}, "q": {Type: "openai", BaseURL: srv.URL + "/v1"}},
		Models: map[string]*catalog.Model{}}
	for _, m := range []string{"cut", "stall", "malformed", "tool", "cont", "refuse", "plain"} {
		cat.Models["p/"+m] = &catalog.Model{Name: "p/" + m, Provider: "p", Upstream: m, ContinuePrefix: m == "cont" || m == "refuse"}
	}
	// One model on two deployments: p's breaks after 40 tokens, q's continues.
	cat.Models["p/deployed"] = &catalog.Model{Name: "p/deployed", ContinuePrefix: true,
		Deployments: []catalog.Deployment{{Provider: "p", Upstream: "cut"}, {Provider: "q", Upstream: "cont"}}}
	return gatewaykit.Bare(t, gatewaykit.Deps(cat, oneKey{})), up
}

// oneKey admits any well-formed key.
type oneKey struct{}

func (oneKey) KeyByHash(_ context.Context, hash string) (*apikey.Key, error) {
	return &apikey.Key{ID: "key_1", Hash: hash, CreatedAt: time.Now()}, nil
}

var _ identity.KeyFinder = oneKey{}

// on_interrupt: resume — a stream that breaks after 40 of 60 tokens continues on the next target
// able to continue a prefix — the model's next deployment before a later model; the caller
// receives exactly the whole answer in one stream.
func TestResumeAnInterruptedStream(t *testing.T) {
	for _, tc := range []struct {
		name, chain string
		resumed     bool
		code        string // the error frame's code when not resumed
		on          string // "model provider" of the report's resumed line, when resumed
	}{
		{"cut after 40 tokens", `"models":["p/cut","p/plain","p/cont"]`, true, "", "p/cont "},
		{"stall after 40 tokens", `"models":["p/stall","p/cont"]`, true, "", "p/cont "},
		{"malformed chunk after 40 tokens", `"models":["p/malformed","p/cont"]`, true, "", "p/cont "},
		// p/refuse would refuse: the continuation must go to the model's other deployment first.
		{"on the model's next deployment", `"models":["p/deployed","p/refuse"]`, true, "", "p/deployed q"},
		{"a refused continuation ends with the original interruption", `"models":["p/cut","p/refuse"]`, false, "stream_interrupted", ""},
		{"never inside a tool call", `"models":["p/tool","p/cont"]`, false, "stream_interrupted", ""},
	} {
		for _, surface := range []string{"openai", "classic"} {
			t.Run(surface+"/"+tc.name, func(t *testing.T) {
				url, up := newResumeGateway(t)
				path, body := "/v1/chat/completions", `{"messages":[{"role":"user","content":"count"}],`
				if surface == "classic" {
					path, body = "/chat/completions", `{"index":"Zero-Knowledge","prompt":"count",`
				}
				body += tc.chain + `,"stream":true,"redundancy":{"on_interrupt":"resume","timeout_ms":1000}`
				if surface == "openai" {
					body += `,"stream_options":{"include_usage":true}`
				}
				body += `}`
				req, _ := http.NewRequest("POST", url+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+apikey.NewSecret())
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(res.Body)
				res.Body.Close()
				var text strings.Builder
				var ids, roles int
				seen := map[string]bool{}
				var last gjson.Result
				var errFrame, usage, split gjson.Result
				done := false
				for _, line := range strings.Split(string(raw), "\n") {
					data, ok := strings.CutPrefix(line, "data: ")
					if !ok {
						continue
					}
					if data == "[DONE]" {
						done = true
						continue
					}
					v := gjson.Parse(data)
					if surface == "classic" {
						switch v.Get("type").String() {
						case "chunk":
							v = v.Get("data")
						case "metadata":
							last = v.Get("data.metadata.failover")
							continue
						case "error":
							errFrame = v.Get("data")
							continue
						case "usage":
							usage = v.Get("data")
							continue
						default:
							continue
						}
					} else if v.Get("error").Exists() {
						errFrame = v.Get("error")
						continue
					}
					if s := v.Get("secureai.failover"); s.Exists() {
						last = s
					}
					if u := v.Get("usage"); u.IsObject() {
						usage = u
					}
					if u := v.Get("secureai.usage_by_model"); u.Exists() {
						split = u
					}
					if id := v.Get("id").String(); id != "" && !seen[id] {
						seen[id] = true
						ids++
					}
					if v.Get("choices.0.delta.role").Exists() {
						roles++
					}
					text.WriteString(v.Get("choices.0.delta.content").String())
				}
				if !tc.resumed {
					if done || errFrame.Get("code").String() != tc.code || text.String() != tokens(0, 40) {
						t.Fatalf("want the original interruption %s and no [DONE]; got done=%v error %s text %q", tc.code, done, errFrame.Raw, text.String())
					}
					return
				}
				if !done || errFrame.Exists() || text.String() != tokens(0, 60) {
					t.Fatalf("resumed stream: done=%v error=%s text %q; want exactly the whole answer\n%s", done, errFrame.Raw, text.String(), raw)
				}
				if ids != 1 || roles != 1 {
					t.Errorf("%d chunk ids and %d role deltas; want one answer: one id, one role", ids, roles)
				}
				attempts := last.Get("attempts").Array()
				final := attempts[len(attempts)-1]
				if on := final.Get("model").String() + " " + final.Get("provider").String(); final.Get("status").String() != "resumed" || on != tc.on || final.Get("chars_delivered").Int() != int64(len(tokens(0, 40))) {
					t.Errorf("report %s, want the resume on %q after %d chars", last.Raw, tc.on, len(tokens(0, 40)))
				}
				// The caller's usage is the whole answer (SPEC 7): the original prompt (the
				// continuation's 70 less the 38 tokens of the 150 delivered characters it was
				// handed), and both parts' completion (38 + 20).
				if usage.Get("prompt_tokens").Int() != 32 || usage.Get("completion_tokens").Int() != 58 || usage.Get("total_tokens").Int() != 90 {
					t.Errorf("usage %s, want prompt 32, completion 58, total 90", usage.Raw)
				}
				if surface == "openai" {
					part := func(a gjson.Result) string {
						s := `{"model":"` + a.Get("model").String() + `"`
						if p := a.Get("provider").String(); p != "" {
							s += `,"provider":"` + p + `"`
						}
						return s
					}
					want := `[` + part(attempts[0]) + `,"prompt_tokens":` + fmt.Sprint((len(body)+3)/4) + `,"completion_tokens":38,"estimated":true},` + part(final) + `,"prompt_tokens":70,"completion_tokens":20}]`
					if split.Raw != want {
						t.Errorf("secureai.usage_by_model %s, want %s", split.Raw, want)
					}
				}
				cont := <-up.continuations
				msgs := gjson.GetBytes(cont, "messages").Array()
				want := `{"role":"assistant","content":` + mustJSON(tokens(0, 40)) + `}`
				if msgs[len(msgs)-1].Raw != want || !gjson.GetBytes(cont, "continue_final_message").Bool() || gjson.GetBytes(cont, "add_generation_prompt").Bool() {
					t.Errorf("continuation request %s; want the original messages plus %s", cont, want)
				}
			})
		}
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The official OpenAI Go SDK reads a resumed stream as one answer: the whole text, and the
// report of the resume on its last chunk.
func TestResumeThroughTheOpenAISDK(t *testing.T) {
	url, _ := newResumeGateway(t)
	client := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey(apikey.NewSecret()), option.WithMaxRetries(0))
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "p/cut", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("count")}},
		option.WithJSONSet("fallback_models", []string{"p/cont"}),
		option.WithJSONSet("redundancy", map[string]any{"on_interrupt": "resume"}))
	var text strings.Builder
	var report gjson.Result
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
		if f := gjson.Get(c.RawJSON(), "secureai.failover"); f.Exists() {
			report = f
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	attempts := report.Get("attempts").Array()
	if text.String() != tokens(0, 60) || len(attempts) != 2 || attempts[1].Get("status").String() != "resumed" {
		t.Errorf("text %q, report %s", text.String(), report.Raw)
	}
}

// anthropicContinuation is an Anthropic Messages server that continues an assistant prefill
// natively: it checks the prefill is exactly the delivered text (trailing whitespace cut, which
// Anthropic refuses) and streams the rest, starting with the space the model would write.
func anthropicContinuation(t *testing.T, got chan<- []byte) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- body
		msgs := gjson.GetBytes(body, "messages").Array()
		last := msgs[len(msgs)-1]
		if last.Get("role").String() != "assistant" || last.Get("content.0.text").String() != strings.TrimRight(tokens(0, 40), " ") {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"type":"error","error":{"type":"invalid_request_error","message":"final assistant content cannot end with trailing whitespace"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(name, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data) }
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"usage":{"input_tokens":80,"output_tokens":1}}}`)
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" "}}`)
		for i := 40; i < 60; i++ {
			text := fmt.Sprintf("t%d ", i)
			if i == 59 {
				text = "t59"
			}
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, text))
		}
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" "}}`)
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":20}}`)
		ev("message_stop", `{"type":"message_stop"}`)
	}))
}

// An interrupted stream resumes natively on Anthropic: the delivered text becomes the assistant's
// prefill (its trailing whitespace cut, as Anthropic requires, and not sent twice).
func TestResumeOnAnthropic(t *testing.T) {
	up := &resumeUpstream{continuations: make(chan []byte, 1)}
	first := httptest.NewServer(up)
	defer first.Close()
	got := make(chan []byte, 1)
	claude := anthropicContinuation(t, got)
	defer claude.Close()
	cat := &catalog.Catalog{Providers: map[string]catalog.ProviderConfig{
		"p":      {Type: "openai", BaseURL: first.URL + "/v1"},
		"claude": {Type: "anthropic", BaseURL: claude.URL, APIKeyEnv: "CLAUDE_KEY"},
	}, Models: map[string]*catalog.Model{
		"p/cut":         {Name: "p/cut", Provider: "p", Upstream: "cut"},
		"claude/sonnet": {Name: "claude/sonnet", Provider: "claude", Upstream: "claude-sonnet", ContinuePrefix: true},
	}}
	deps := gatewaykit.Deps(cat, oneKey{})
	deps.Credential = func(string) string { return "test-key" }
	url := gatewaykit.Bare(t, deps)
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(
		`{"models":["p/cut","claude/sonnet"],"stream":true,"redundancy":{"on_interrupt":"resume"},"messages":[{"role":"user","content":"count"}]}`))
	req.Header.Set("Authorization", "Bearer "+apikey.NewSecret())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var text strings.Builder
	for _, line := range strings.Split(string(raw), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && data != "[DONE]" {
			text.WriteString(gjson.Get(data, "choices.0.delta.content").String())
		}
	}
	if text.String() != tokens(0, 60) || !strings.HasSuffix(strings.TrimSpace(string(raw)), "data: [DONE]") {
		t.Fatalf("text %q\n%s", text.String(), raw)
	}
	<-got
}

// A resumed stream bills both models (points count each part's answer), and the continuation's
// reservation is a hold on the user's record like the admitted one: once the stream has ended
// both are settled and no hold is left to refund.
func TestAResumedStreamBillsBothPartsAndLeavesNoHold(t *testing.T) {
	cat, up := gatewaykit.Fakes(t, "")
	cat.Models["other/continue"].ContinuePrefix = true
	g := gatewaykit.Serve(t, cat, gatewaykit.Env(), gatewaykit.WithUpstream(up))
	key := g.NewKey(t, `{"name":"resumer","userId":"resumer"}`)
	if status, _, b := g.Call(t, "PUT", "/admin/users/resumer", g.Admin, `{"monthlyPoints":10}`); status != 200 {
		t.Fatalf("setting the user: %d %s", status, b.Raw)
	}
	req, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions", strings.NewReader(
		`{"models":["fake/cut","other/continue"],"stream":true,"redundancy":{"on_interrupt":"resume"},"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(raw), `"status":"resumed"`) || !strings.HasSuffix(strings.TrimSpace(string(raw)), "data: [DONE]") {
		t.Fatalf("the stream was not resumed to its end:\n%s", raw)
	}
	// The stream's books are settled as it closes, just after its last chunk.
	var used int64
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, _, usage := g.Call(t, "GET", "/usage", key, "")
		if used = usage.Get("points.used").Int(); used == 2 || time.Now().After(deadline) {
			break
		}
	}
	u, err := g.Store.User(context.Background(), "resumer")
	if err != nil {
		t.Fatal(err)
	}
	if used != 2 || u.PointsUsed != 2 || len(u.Holds) != 0 {
		t.Errorf("points used %d (record %d), holds %v; want 2 — one a part — and no hold left", used, u.PointsUsed, u.Holds)
	}
}
