package agentclients

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// The fake provider's models, as the catalog names them: fake/fail is every chain's primary and
// always answers 500; fake/agent is the fallback and follows the script below.
const (
	failModel  = "fail"
	agentModel = "agent"
)

// plainAnswer is fake/agent's answer to a prompt that asks for no tool.
const plainAnswer = "Served by the fallback model: hello from fake/agent."

// toolQuote starts fake/agent's answer to a tool result; the result follows it.
const toolQuote = "The tool returned: "

// callDirective is how a prompt asks fake/agent for a tool call: "CALL <tool> <JSON arguments>" on
// a line of the last user message. The fake answers it with that call only when the request offers
// the tool, so a client that lost its tools on the way is caught.
var callDirective = regexp.MustCompile(`(?m)CALL ([A-Za-z0-9_.-]+) (\{.*\})\s*$`)

// chatRequest is what the fake reads of a Chat Completions request: the gateway translated the
// client's Messages or Responses request into it.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// text is a message content's text: the string, or its text parts joined.
func text(content json.RawMessage) string {
	c := gjson.ParseBytes(content)
	if c.Type == gjson.String {
		return c.String()
	}
	var b strings.Builder
	for _, p := range c.Array() {
		b.WriteString(p.Get("text").String())
	}
	return b.String()
}

// exchange is one request the fake served and what it answered.
type exchange struct {
	Model string
	Body  []byte
	Req   chatRequest
	Reply string // "500", "text" or "tool_call <name>"
}

// fakeProvider is an OpenAI Chat Completions server on 127.0.0.1 scripted for the agent clients.
type fakeProvider struct {
	mu  sync.Mutex
	log []exchange
}

func startFake(t *testing.T) (*fakeProvider, string) {
	t.Helper()
	f := &fakeProvider{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL + "/v1"
}

// exchanges returns what the fake served so far, in order.
func (f *fakeProvider) exchanges() []exchange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]exchange(nil), f.log...)
}

// summary lists the exchanges in one line each, for failure messages.
func (f *fakeProvider) summary() string {
	var b strings.Builder
	for i, e := range f.exchanges() {
		last := ""
		if n := len(e.Req.Messages); n > 0 {
			m := e.Req.Messages[n-1]
			last = fmt.Sprintf("%s %.120q", m.Role, text(m.Content))
		}
		fmt.Fprintf(&b, "  %d. model=%s stream=%v tools=%d messages=%d last=%s → %s\n", i+1, e.Model, e.Req.Stream, len(e.Req.Tools), len(e.Req.Messages), last, e.Reply)
	}
	return b.String()
}

func (f *fakeProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") || err != nil {
		http.Error(w, `{"error":{"message":"unknown route","type":"invalid_request_error","param":null,"code":"not_found"}}`, http.StatusNotFound)
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad JSON","type":"invalid_request_error","param":null,"code":null}}`, http.StatusBadRequest)
		return
	}
	e := exchange{Model: req.Model, Body: body, Req: req}
	defer func() {
		f.mu.Lock()
		f.log = append(f.log, e)
		f.mu.Unlock()
	}()
	if req.Model != agentModel {
		e.Reply = "500"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"message":"the fake primary model is down","type":"server_error","param":null,"code":null}}`)
		return
	}
	a := script(req)
	e.Reply = "text"
	if a.tool != "" {
		e.Reply = "tool_call " + a.tool
	}
	if req.Stream {
		streamAnswer(w, req, a)
	} else {
		wholeAnswer(w, req, a)
	}
}

// answer is what fake/agent says: text, or one call of tool with args.
type answer struct {
	text, tool, args string
}

// script decides fake/agent's answer. The last message that is not a system one counts (Claude
// Code sends its environment as a role-system message after the prompt): a tool result is quoted
// back; a user message with a CALL directive naming an offered tool gets that call; anything else
// the plain answer.
func script(req chatRequest) answer {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		switch m.Role {
		case "system", "developer":
			continue
		case "tool":
			return answer{text: toolQuote + text(m.Content)}
		case "user":
			if d := callDirective.FindStringSubmatch(text(m.Content)); d != nil {
				for _, t := range req.Tools {
					if t.Function.Name == d[1] {
						return answer{tool: d[1], args: d[2]}
					}
				}
			}
		}
		break
	}
	return answer{text: plainAnswer}
}

var usage = map[string]int{"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}

func toolCall(a answer) map[string]any {
	return map[string]any{"id": "call_fake1", "type": "function", "function": map[string]any{"name": a.tool, "arguments": a.args}}
}

func wholeAnswer(w http.ResponseWriter, req chatRequest, a answer) {
	msg := map[string]any{"role": "assistant", "content": a.text}
	finish := "stop"
	if a.tool != "" {
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{toolCall(a)}}
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   usage,
	})
}

func streamAnswer(w http.ResponseWriter, req chatRequest, a answer) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if a.tool != "" {
		c := toolCall(a)
		c["index"] = 0
		c["function"] = map[string]any{"name": a.tool, "arguments": ""}
		chunk(map[string]any{"tool_calls": []any{c}}, nil)
		half := len(a.args) / 2
		for _, part := range []string{a.args[:half], a.args[half:]} {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": part}}}}, nil)
		}
		chunk(map[string]any{}, "tool_calls")
	} else {
		for _, word := range strings.SplitAfter(a.text, " ") {
			chunk(map[string]any{"content": word}, nil)
		}
		chunk(map[string]any{}, "stop")
	}
	if req.StreamOptions.IncludeUsage {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{}, "usage": usage,
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}
