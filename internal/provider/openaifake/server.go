// Package openaifake is an OpenAI-compatible server whose model name chooses its behaviour: a
// healthy answer, or one of the faults a real provider shows (errors, resets, hangs, slow or
// stalled streams, malformed chunks, a missing terminator). The local demo provider and the tests
// both use it, so the demo exercises the same code paths a real outage would.
package openaifake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// Answer is the healthy model's reply, streamed word by word.
const Answer = "Hello! This answer was served by the SecureAI demo provider."

// Models are the behaviours this server knows.
var Models = []string{
	"ok", "tools", "error-500", "error-503", "error-429", "error-429-retry-after", "reset", "hang",
	"slow-first-token", "cut", "cut-before-token", "stall", "malformed", "malformed-first",
	"no-done", "no-done-hold", "stream-error", "context-length", "content-filter", "continue",
}

// SlowPrefix names a slow model with its own delay: "slow-first-token-600" answers like
// "slow-first-token" after 600 ms, so one fake can serve models of different speeds.
const SlowPrefix = "slow-first-token-"

// Server records the calls it receives. The zero value is not usable; use New.
type Server struct {
	// FirstTokenDelay is how long "slow-first-token" waits before its first content token.
	FirstTokenDelay time.Duration

	mu     sync.Mutex
	calls  map[string]int
	closed map[string]int
}

// New returns a server whose slow model waits firstTokenDelay.
func New(firstTokenDelay time.Duration) *Server {
	return &Server{FirstTokenDelay: firstTokenDelay, calls: map[string]int{}, closed: map[string]int{}}
}

// Calls returns how many requests model received.
func (s *Server) Calls(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[model]
}

// Closed returns how many requests to model the caller closed while the fake was still waiting to
// answer (a slow first token, a hang, a stall): the connection of an abandoned attempt.
func (s *Server) Closed(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed[model]
}

// ServeHTTP answers POST …/chat/completions.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		writeError(w, http.StatusNotFound, "invalid_request_error", "not_found", "unknown route")
		return
	}
	model, stream, includeUsage, prefix, err := readRequest(r)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.calls[model]++
	s.mu.Unlock()
	c := call{model: model, kind: model, delay: s.FirstTokenDelay}
	if ms, ok := strings.CutPrefix(model, SlowPrefix); ok {
		if n, err := strconv.Atoi(ms); err == nil && n >= 0 {
			c.kind, c.delay = "slow-first-token", time.Duration(n)*time.Millisecond
		}
	}

	switch c.kind {
	case "error-500":
		writeError(w, 500, "server_error", "", "The server had an error while processing your request.")
	case "error-503":
		writeError(w, 503, "server_error", "", "The engine is currently overloaded, please try again later.")
	case "error-429":
		writeError(w, 429, "rate_limit_exceeded", "rate_limit_exceeded", "Rate limit reached for requests.")
	case "error-429-retry-after":
		w.Header().Set("Retry-After", "2")
		writeError(w, 429, "rate_limit_exceeded", "rate_limit_exceeded", "Rate limit reached for requests.")
	case "context-length":
		writeError(w, 400, "invalid_request_error", "context_length_exceeded", "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.")
	case "content-filter":
		writeError(w, 400, "invalid_request_error", "content_filter", "The response was filtered due to the prompt triggering the content management policy.")
	case "reset":
		abort()
	case "hang":
		s.wait(r, c, -1)
	case "continue":
		// Continues an answer it (or another demo model) began: the assistant prefix it is
		// handed with continue_final_message must be the start of the demo answer.
		if !strings.HasPrefix(Answer, prefix) || !stream {
			writeError(w, 400, "invalid_request_error", "", "continue expects a streamed request whose last message is an assistant prefix of the demo answer, with continue_final_message")
			return
		}
		s.streamWords(w, model, includeUsage, strings.SplitAfter(Answer[len(prefix):], " "))
	case "ok", "tools", "slow-first-token", "cut", "cut-before-token", "stall", "malformed", "malformed-first", "no-done", "no-done-hold", "stream-error":
		if stream {
			s.stream(w, r, c, includeUsage)
		} else {
			s.complete(w, r, c)
		}
	default:
		writeError(w, 404, "invalid_request_error", "model_not_found", fmt.Sprintf("The model `%s` does not exist.", model))
	}
}

// readRequest reads the three fields the fake acts on. The body is read into one buffer of its
// declared length (io.ReadAll would grow through a dozen doublings) and dropped on return: as the
// demo provider the fake runs inside the gateway's process, so a multi-MB prompt kept or copied
// here is the gateway's memory.
func readRequest(r *http.Request) (model string, stream, includeUsage bool, prefix string, err error) {
	var body []byte
	if r.ContentLength >= 0 {
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(r.Body)
	}
	if err != nil {
		return "", false, false, "", err
	}
	got := gjson.GetManyBytes(body, "model", "stream", "stream_options.include_usage", "continue_final_message", "messages.@reverse.0")
	if last := got[4]; got[3].Bool() && last.Get("role").String() == "assistant" {
		prefix = last.Get("content").String()
	}
	return got[0].String(), got[1].Bool(), got[2].Bool(), prefix, nil
}

// abort drops the connection without an answer, as a crashed upstream or reset does.
func abort() { panic(http.ErrAbortHandler) }

// call is one request: the model it named, the behaviour that name chooses, and how long a slow
// behaviour waits.
type call struct {
	model, kind string
	delay       time.Duration
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request, c call) {
	model := c.model
	switch c.kind {
	case "slow-first-token":
		if !s.wait(r, c, c.delay) {
			return
		}
	case "stall":
		s.wait(r, c, -1)
		return
	case "cut", "cut-before-token":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "4096")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-cut","object":"chat.completion","choices":[{"index":0,`)
		w.(http.Flusher).Flush()
		abort()
	case "malformed", "malformed-first":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-bad","choices":[{"index":0,"message":`)
		return
	}
	msg := map[string]any{"role": "assistant", "content": Answer, "refusal": nil}
	finish := "stop"
	if c.kind == "tools" {
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{toolCall()}}
		finish = "tool_calls"
	}
	writeJSON(w, 200, map[string]any{
		"id": "chatcmpl-" + model, "object": "chat.completion", "created": created, "model": model,
		"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":              map[string]any{"prompt_tokens": 12, "completion_tokens": completionTokens, "total_tokens": 12 + completionTokens},
		"system_fingerprint": "fp_fake",
	})
}

func toolCall() map[string]any {
	return map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}
}

const created = 1764460800

var completionTokens = len(strings.Fields(Answer))

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// wait waits d (forever when d < 0) unless the caller closes the request first, which it counts
// (Closed); it reports whether the wait completed.
func (s *Server) wait(r *http.Request, c call, d time.Duration) bool {
	var done <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		done = t.C
	}
	select {
	case <-done:
		return true
	case <-r.Context().Done():
		s.mu.Lock()
		s.closed[c.model]++
		s.mu.Unlock()
		return false
	}
}
