package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/tidwall/gjson"
)

// The fakes of the two agent wires. Like openaifake, the model a request names chooses the
// behaviour, and a healthy answer is openaifake.Answer word by word, so one table of faults holds
// for every wire. Each fake records every call (path, headers, body) and the events it sent, so a
// passthrough test can compare what the caller got with what the provider wrote.

// The fakes' behaviours (a model's name), and the Anthropic fake's credential.
const (
	anthOK            = "ok"                         // a whole answer
	anthThinking      = "thinking"                   // a thinking block (with its signature), then the answer
	anthOverloaded    = "overloaded"                 // HTTP 529 overloaded_error
	anthEventBefore   = "error-event-before-content" // message_start, ping, then event: error overloaded
	anthEventAfter    = "error-event-after-content"  // three words, then event: error overloaded
	anthSlow          = "slow-first-token"           // message_start and ping at once, content after slowFirstToken
	anthStall         = "stall"                      // three words, then silence until the caller leaves
	anthHold          = "stop-hold"                  // the whole answer but message_stop, the connection held open
	anthEOF           = "eof-after-content"          // three words, then the end of the response: no message_delta
	anthKey           = "sk-ant-provider-key"        // the credential the gateway sends the Anthropic fake
	anthKeyEnv        = "E2E_ANTHROPIC_KEY"
	respOK            = "ok"                         // a whole answer
	respError500      = "error-500"                  // HTTP 500 on /responses (and on /chat/completions)
	respFailedBefore  = "failed-before-content"      // response.created, in_progress, then response.failed
	respFailedAfter   = "failed-after-content"       // three words, then response.failed
	respErrorBefore   = "error-event-before-content" // response.created, in_progress, then an error event
	respErrorAfter    = "error-event-after-content"  // three words, then an error event
	respSlow          = "slow-first-token"           // the message item and its part at once, text after slowFirstToken
	respStall         = "stall"                      // three words, then silence until the caller leaves
	respHold          = "completed-hold"             // the whole answer, the connection held open after response.completed
	respEOF           = "eof-after-content"          // three words, then the end of the response: no response.completed
	wireWordsBeforeCt = 3                            // the words a fault "after content" sends first
)

// anthModels and respModels are the fakes' models, each in the catalog as "anth/<m>" and
// "resp/<m>" (and "respoff/<m>": the Responses fake as a provider not marked responses: true).
var (
	anthModels = []string{anthOK, anthThinking, anthOverloaded, anthEventBefore, anthEventAfter, anthSlow, anthStall, anthHold, anthEOF}
	respModels = []string{respOK, respError500, respFailedBefore, respFailedAfter, respErrorBefore, respErrorAfter, respSlow, respStall, respHold, respEOF}
)

// wireCall is one request a wire fake received.
type wireCall struct {
	path   string
	header http.Header
	body   []byte
}

// wireFake records calls and what it sent; serve is its wire's behaviour.
type wireFake struct {
	mu    sync.Mutex
	calls []wireCall
	sent  map[string][]sseEvent // the events last streamed, by model
	plain map[string][]byte     // the body last answered, by model
	serve func(f *wireFake, w http.ResponseWriter, r *http.Request, model string, stream bool)
}

// sseEvent is one Server-Sent Event: its name (empty when the wire names none) and data.
type sseEvent struct{ name, data string }

func newWireFake(t *testing.T, serve func(*wireFake, http.ResponseWriter, *http.Request, string, bool)) (*wireFake, string) {
	t.Helper()
	f := &wireFake{sent: map[string][]sseEvent{}, plain: map[string][]byte{}, serve: serve}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *wireFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.mu.Lock()
	f.calls = append(f.calls, wireCall{path: r.URL.Path, header: r.Header.Clone(), body: body})
	f.mu.Unlock()
	v := gjson.GetManyBytes(body, "model", "stream")
	f.serve(f, w, r, v[0].String(), v[1].Bool())
}

// pause, among the events a fake streams, holds the rest back for slowFirstToken (a slow first
// token); hold holds them until the caller leaves (a stall). Neither is sent.
var (
	pause = sseEvent{name: "\x00pause"}
	hold  = sseEvent{name: "\x00hold"}
)

// stream writes events, flushing each, and records them for model; it stops when the caller
// leaves during a pause.
func (f *wireFake) stream(w http.ResponseWriter, r *http.Request, model string, events []sseEvent) {
	var sent []sseEvent
	for _, e := range events {
		if e != pause && e != hold {
			sent = append(sent, e)
		}
	}
	f.mu.Lock()
	f.sent[model] = sent
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		if e == hold {
			<-r.Context().Done()
			return
		}
		if e == pause {
			if !slow(r) {
				return
			}
			continue
		}
		if e.name != "" {
			_, _ = fmt.Fprintf(w, "event: %s\n", e.name)
		}
		_, _ = fmt.Fprintf(w, "data: %s\n\n", e.data)
		w.(http.Flusher).Flush()
	}
}

// slow waits slowFirstToken unless the caller leaves first; it reports whether the wait completed.
func slow(r *http.Request) bool {
	t := time.NewTimer(slowFirstToken)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// json answers status with v, recording a 200's body for model.
func (f *wireFake) json(w http.ResponseWriter, status int, model string, v any, header ...string) {
	b, _ := json.Marshal(v)
	if status == http.StatusOK {
		f.mu.Lock()
		f.plain[model] = b
		f.mu.Unlock()
	}
	for i := 0; i+1 < len(header); i += 2 {
		w.Header().Set(header[i], header[i+1])
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func words() []string { return strings.SplitAfter(openaifake.Answer, " ") }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// serveAnthropic is Anthropic's Messages API at /v1/messages.
func serveAnthropic(f *wireFake, w http.ResponseWriter, r *http.Request, model string, stream bool) {
	if r.URL.Path != "/v1/messages" || r.Header.Get("X-Api-Key") != anthKey || r.Header.Get("Anthropic-Version") == "" {
		f.json(w, http.StatusUnauthorized, model, anthError("authentication_error", "wrong path, key or version"))
		return
	}
	id := "msg_fake_" + strings.ReplaceAll(model, "-", "_")
	usage := map[string]any{"input_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": len(words())}
	switch model {
	case anthOverloaded:
		f.json(w, 529, model, anthError("overloaded_error", "Overloaded"))
		return
	case anthOK, anthThinking, anthEventBefore, anthEventAfter, anthSlow, anthStall, anthHold, anthEOF:
	default:
		f.json(w, http.StatusNotFound, model, anthError("not_found_error", "model: "+model))
		return
	}
	if !stream {
		if model == anthEventBefore || model == anthEventAfter {
			f.json(w, 529, model, anthError("overloaded_error", "Overloaded"))
			return
		}
		if model == anthStall {
			<-r.Context().Done() // a stalled answer never comes
			return
		}
		if model == anthSlow && !slow(r) {
			return
		}
		var content []any
		if model == anthThinking {
			content = append(content, map[string]any{"type": "thinking", "thinking": "Greeting the user.", "signature": "c2lnbmF0dXJl"})
		}
		content = append(content, map[string]any{"type": "text", "text": openaifake.Answer})
		f.json(w, http.StatusOK, model, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": "end_turn", "stop_sequence": nil, "usage": usage,
			"container": nil, "provider_extra": map[string]any{"kept": true}})
		return
	}
	ev := func(v map[string]any) sseEvent { return sseEvent{name: v["type"].(string), data: mustJSON(v)} }
	start := map[string]any{"input_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}
	events := []sseEvent{
		ev(map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": start}}),
		{name: "ping", data: `{"type": "ping"}`},
	}
	overloaded := sseEvent{name: "error", data: mustJSON(anthError("overloaded_error", "Overloaded"))}
	if model == anthEventBefore {
		f.stream(w, r, model, append(events, overloaded))
		return
	}
	if model == anthSlow {
		events = append(events, pause)
	}
	index := 0
	if model == anthThinking {
		events = append(events,
			ev(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}),
			ev(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "thinking_delta", "thinking": "Greeting the user."}}),
			ev(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "signature_delta", "signature": "c2lnbmF0dXJl"}}),
			ev(map[string]any{"type": "content_block_stop", "index": 0}))
		index = 1
	}
	events = append(events, ev(map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}}))
	for i, word := range words() {
		if model == anthEventAfter && i == wireWordsBeforeCt {
			f.stream(w, r, model, append(events, overloaded))
			return
		}
		if model == anthStall && i == wireWordsBeforeCt {
			f.stream(w, r, model, append(events, hold))
			return
		}
		if model == anthEOF && i == wireWordsBeforeCt {
			f.stream(w, r, model, events)
			return
		}
		events = append(events, ev(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": word}}))
	}
	events = append(events,
		ev(map[string]any{"type": "content_block_stop", "index": index}),
		ev(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": len(words())}}))
	if model == anthHold {
		f.stream(w, r, model, append(events, hold))
		return
	}
	f.stream(w, r, model, append(events, ev(map[string]any{"type": "message_stop"})))
}

func anthError(typ, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

// serveResponses is OpenAI's Responses API at /v1/responses; its /v1/chat/completions is
// openaifake's, each behaviour mapped to the same fault on that wire, so a chat surface's request
// to a Responses provider meets the fault its name promises.
func serveResponses(chat http.Handler) func(*wireFake, http.ResponseWriter, *http.Request, string, bool) {
	return func(f *wireFake, w http.ResponseWriter, r *http.Request, model string, stream bool) {
		switch r.URL.Path {
		case "/v1/chat/completions":
			chatFault(w, r, chat, model, stream)
		case "/v1/responses":
			responsesFault(f, w, r, model, stream)
		default:
			f.json(w, http.StatusNotFound, model, oaiError("not found", "invalid_request_error", ""))
		}
	}
}

func oaiError(msg, typ, code string) map[string]any {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	return map[string]any{"error": e}
}

// chatFault serves the Chat Completions equivalent of a Responses behaviour.
func chatFault(w http.ResponseWriter, r *http.Request, chat http.Handler, model string, stream bool) {
	equivalent := map[string]string{respOK: "ok", respError500: "error-500", respFailedBefore: "stream-error", respErrorBefore: "stream-error",
		respSlow: "slow-first-token", respStall: "stall", respHold: "no-done-hold", respEOF: "cut"}[model]
	if model == respFailedAfter || model == respErrorAfter {
		if !stream {
			equivalent = "error-500"
		} else {
			// Three words, then an error frame: the chat wire's failure after content.
			w.Header().Set("Content-Type", "text/event-stream")
			chunk := func(delta string) {
				_, _ = fmt.Fprintf(w, "data: %s\n\n", mustJSON(map[string]any{"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1,
					"model": model, "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": delta}, "finish_reason": nil}}}))
				w.(http.Flusher).Flush()
			}
			for _, word := range words()[:wireWordsBeforeCt] {
				chunk(word)
			}
			_, _ = fmt.Fprintf(w, "data: %s\n\n", mustJSON(oaiError("The server had an error", "server_error", "")))
			return
		}
	}
	if equivalent == "" {
		equivalent = "no-such-model"
	}
	body, _ := io.ReadAll(r.Body)
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	m["model"] = equivalent
	r.Body = io.NopCloser(strings.NewReader(mustJSON(m)))
	r.ContentLength = -1
	chat.ServeHTTP(w, r)
}

// responsesFault serves a Responses behaviour.
func responsesFault(f *wireFake, w http.ResponseWriter, r *http.Request, model string, stream bool) {
	id := "resp_fake_" + strings.ReplaceAll(model, "-", "_")
	switch model {
	case respError500:
		f.json(w, http.StatusInternalServerError, model, oaiError("The server had an error while processing your request.", "server_error", ""))
		return
	case respOK, respFailedBefore, respFailedAfter, respErrorBefore, respErrorAfter, respSlow, respStall, respHold, respEOF:
	default:
		f.json(w, http.StatusNotFound, model, oaiError("The model `"+model+"` does not exist.", "invalid_request_error", "model_not_found"))
		return
	}
	msgID := "msg_fake_1"
	text := func(s string) map[string]any {
		return map[string]any{"type": "output_text", "text": s, "annotations": []any{}, "logprobs": []any{}}
	}
	item := func(status string, content []any) map[string]any {
		return map[string]any{"type": "message", "id": msgID, "status": status, "role": "assistant", "content": content}
	}
	usage := map[string]any{"input_tokens": 12, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens": len(words()),
		"output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 12 + len(words())}
	response := func(status string, output []any, usage any, errObj any) map[string]any {
		return map[string]any{"id": id, "object": "response", "created_at": 1764460800, "status": status, "error": errObj,
			"incomplete_details": nil, "model": model, "output": output, "parallel_tool_calls": true, "previous_response_id": nil,
			"store": false, "temperature": 1.0, "tool_choice": "auto", "tools": []any{}, "top_p": 1.0, "truncation": "disabled",
			"usage": usage, "metadata": map[string]any{}, "service_tier": "default", "text": map[string]any{"format": map[string]any{"type": "text"}},
			"reasoning": map[string]any{"effort": nil, "summary": nil}, "instructions": nil, "max_output_tokens": nil, "user": nil}
	}
	if !stream {
		if model == respStall {
			<-r.Context().Done() // a stalled answer never comes
			return
		}
		if model == respSlow && !slow(r) {
			return
		}
		if model != respOK && model != respSlow && model != respHold {
			f.json(w, http.StatusInternalServerError, model, oaiError("The server had an error while processing your request.", "server_error", ""))
			return
		}
		f.json(w, http.StatusOK, model, response("completed", []any{item("completed", []any{text(openaifake.Answer)})}, usage, nil))
		return
	}
	seq := 0
	var events []sseEvent
	add := func(v map[string]any) {
		v["sequence_number"] = seq
		seq++
		events = append(events, sseEvent{name: v["type"].(string), data: mustJSON(v)})
	}
	add(map[string]any{"type": "response.created", "response": response("in_progress", []any{}, nil, nil)})
	add(map[string]any{"type": "response.in_progress", "response": response("in_progress", []any{}, nil, nil)})
	failed := func() {
		if model == respErrorBefore || model == respErrorAfter {
			add(map[string]any{"type": "error", "code": "server_error", "message": "The model is overloaded", "param": nil})
		} else {
			add(map[string]any{"type": "response.failed", "response": response("failed", []any{}, nil,
				map[string]any{"code": "server_error", "message": "The model is overloaded"})})
		}
		f.stream(w, r, model, events)
	}
	if model == respFailedBefore || model == respErrorBefore {
		failed()
		return
	}
	add(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item("in_progress", []any{})})
	add(map[string]any{"type": "response.content_part.added", "item_id": msgID, "output_index": 0, "content_index": 0, "part": text("")})
	if model == respSlow {
		events = append(events, pause)
	}
	for i, word := range words() {
		if (model == respFailedAfter || model == respErrorAfter) && i == wireWordsBeforeCt {
			failed()
			return
		}
		if model == respStall && i == wireWordsBeforeCt {
			f.stream(w, r, model, append(events, hold))
			return
		}
		if model == respEOF && i == wireWordsBeforeCt {
			f.stream(w, r, model, events)
			return
		}
		add(map[string]any{"type": "response.output_text.delta", "item_id": msgID, "output_index": 0, "content_index": 0, "delta": word, "logprobs": []any{}})
	}
	add(map[string]any{"type": "response.output_text.done", "item_id": msgID, "output_index": 0, "content_index": 0, "text": openaifake.Answer, "logprobs": []any{}})
	add(map[string]any{"type": "response.content_part.done", "item_id": msgID, "output_index": 0, "content_index": 0, "part": text(openaifake.Answer)})
	done := item("completed", []any{text(openaifake.Answer)})
	add(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": done})
	add(map[string]any{"type": "response.completed", "response": response("completed", []any{done}, usage, nil)})
	if model == respHold {
		events = append(events, hold)
	}
	f.stream(w, r, model, events)
}
