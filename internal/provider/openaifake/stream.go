package openaifake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

type sender struct {
	w     http.ResponseWriter
	model string
}

func (s sender) raw(data string) {
	_, _ = fmt.Fprintf(s.w, "data: %s\n\n", data)
	s.w.(http.Flusher).Flush()
}

func (s sender) chunk(delta map[string]any, finish any, usage any) {
	c := map[string]any{
		"id": "chatcmpl-" + s.model, "object": "chat.completion.chunk", "created": created, "model": s.model,
		"system_fingerprint": "fp_fake",
		"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
	}
	if usage != nil {
		c["choices"] = []any{}
		c["usage"] = usage
	}
	b, _ := json.Marshal(c)
	s.raw(string(b))
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, c call, includeUsage bool) {
	model := c.kind
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	out := sender{w: w, model: c.model}
	_, _ = io.WriteString(w, ": keep-alive\n\n")
	out.chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)

	switch model {
	case "stream-error":
		out.raw(`{"error":{"message":"The server is overloaded","type":"server_error","code":null}}`)
		return
	case "cut-before-token":
		abort()
	case "malformed-first":
		out.raw(`{"id":"chatcmpl-bad","choices":[{"delta":{"content":"Hel`)
		return
	case "slow-first-token":
		if !s.wait(r, c, c.delay) {
			return
		}
	case "tools":
		out.chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": ""}}}}, nil, nil)
		out.chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `{"city":"Paris"}`}}}}, nil, nil)
		out.chunk(map[string]any{}, "tool_calls", nil)
		finish(out, includeUsage, true)
		return
	}

	words := strings.SplitAfter(Answer, " ")
	for i, word := range words {
		out.chunk(map[string]any{"content": word}, nil, nil)
		if i == 2 {
			switch model {
			case "cut":
				abort()
			case "stall":
				s.wait(r, c, -1)
				return
			case "malformed":
				out.raw(`{"id":"chatcmpl-bad","choices":[{"delta":{"content":"oops`)
				return
			}
		}
	}
	out.chunk(map[string]any{}, "stop", nil)
	finish(out, includeUsage, model != "no-done" && model != "no-done-hold")
	if model == "no-done-hold" {
		<-r.Context().Done()
	}
}

// streamWords streams words as the content of one answer, then its end.
func (s *Server) streamWords(w http.ResponseWriter, model string, includeUsage bool, words []string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	out := sender{w: w, model: model}
	out.chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for _, word := range words {
		if word != "" {
			out.chunk(map[string]any{"content": word}, nil, nil)
		}
	}
	out.chunk(map[string]any{}, "stop", nil)
	finish(out, includeUsage, true)
}

// finish sends usage when asked for, then the terminator unless this model forgets it.
func finish(out sender, includeUsage, terminate bool) {
	if includeUsage {
		out.chunk(nil, nil, map[string]any{"prompt_tokens": 12, "completion_tokens": completionTokens, "total_tokens": 12 + completionTokens})
	}
	if terminate {
		out.raw("[DONE]")
	}
}
