package openapitest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeT records what Handler reports, so a test can assert the wrapper fails what it must.
type fakeT struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (f *fakeT) Helper()           {}
func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Errorf(format string, a ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, a...))
}
func (f *fakeT) Fatal(a ...any) { f.errors = append(f.errors, fmt.Sprint(a...)) }
func (f *fakeT) end() {
	for _, fn := range f.cleanups {
		fn()
	}
}

// send serves one request through Handler around answer and returns what it reported.
func send(t *testing.T, method, path, body string, answer http.HandlerFunc) []string {
	t.Helper()
	ft := &fakeT{TB: t}
	srv := httptest.NewServer(Handler(ft, answer))
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	srv.Close()
	ft.end()
	return ft.errors
}

func jsonAnswer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_1")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func TestHandlerHoldsAnswersToTheDocument(t *testing.T) {
	usage := `{"success":false,"error":"Invalid API key","message":"no key","request_id":"req_1"}`
	for _, tc := range []struct {
		name, method, path, body string
		answer                   http.HandlerFunc
		fails                    string // "" when nothing must be reported
	}{
		{"a documented error passes", "GET", "/usage", "", jsonAnswer(401, usage), ""},
		{"an undocumented route that is refused passes", "GET", "/nowhere", "", jsonAnswer(404, usage), ""},
		{"an undocumented route that answers fails", "GET", "/nowhere", "", jsonAnswer(200, `{}`), "not in the document"},
		{"an undocumented status fails", "GET", "/usage", "", jsonAnswer(418, usage), "does not match"},
		{"a body of the wrong shape fails", "GET", "/usage", "", jsonAnswer(401, `{"success":false}`), "does not match"},
		{"a missing X-Request-Id fails", "GET", "/usage", "", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			_, _ = io.WriteString(w, usage)
		}, "X-Request-Id"},
		{"a request the document refuses, served, fails", "POST", "/admin/circuit-breakers", `{"subjectType":"planet"}`,
			jsonAnswer(201, `{"success":true,"circuitBreaker":{"subject":"k:1","subjectType":"key","subjectId":"1","openedBy":"a","openedAt":"2026-01-01T00:00:00Z"}}`),
			"refuses this request"},
		{"a request the document refuses, refused, passes", "POST", "/admin/circuit-breakers", `{"subjectType":"planet"}`, jsonAnswer(400, usage), ""},
		{"a stream is checked for its headers only", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`,
			func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("X-Request-Id", "req_1")
				_, _ = io.WriteString(w, "data: not json\n\n")
			}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := send(t, tc.method, tc.path, tc.body, tc.answer)
			switch {
			case tc.fails == "" && len(errs) > 0:
				t.Errorf("reported %v, want nothing", errs)
			case tc.fails != "" && (len(errs) == 0 || !strings.Contains(strings.Join(errs, "\n"), tc.fails)):
				t.Errorf("reported %v, want an error naming %q", errs, tc.fails)
			}
		})
	}
}

// CheckEvents holds each frame of a stream to the schema the document gives it: by event name on
// the Messages surface, one schema for every data line on the chat surface.
func TestCheckEventsHoldsFramesToTheDocument(t *testing.T) {
	const start = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"demo/ok","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0},"secureai":{"served_model":"demo/ok","requested_model":"demo/ok"}}}

`
	const rest = `event: ping
data: {"type":"ping"}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":3,"output_tokens":1}}

event: message_stop
data: {"type":"message_stop"}

`
	const created = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","error":null,"incomplete_details":null,"model":"demo/ok","output":[],"usage":null,"secureai":{"served_model":"demo/ok","requested_model":"demo/ok"}}}

`
	const items = `event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"message","id":"msg_0_1","status":"in_progress","role":"assistant","content":[]}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_0_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}

`
	const completed = `event: response.completed
data: {"type":"response.completed","sequence_number":3,"response":{"id":"resp_1","object":"response","created_at":1,"status":"completed","error":null,"incomplete_details":null,"model":"demo/ok","output":[{"type":"message","id":"msg_0_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[]}]}],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2},"secureai":{"served_model":"demo/ok","requested_model":"demo/ok"}}}

`
	chat := `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}],"secureai":{"served_model":"demo/ok","requested_model":"demo/ok"}}

data: [DONE]

`
	for _, tc := range []struct {
		name, path, body string
		fails            string // "" when nothing must be reported
	}{
		{"a whole Messages stream passes", "/v1/messages", start + rest, ""},
		{"a Messages stream ended by its error event passes", "/v1/messages", start +
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"cut\"}}\n\n", ""},
		{"a message_start without the report fails", "/v1/messages", strings.Replace(start, `,"secureai":{"served_model":"demo/ok","requested_model":"demo/ok"}`, "", 1) + rest, "does not match"},
		{"a delta of an unknown type fails", "/v1/messages", start + strings.Replace(rest, "text_delta", "text_deltas", 1), "does not match"},
		{"an event the document does not name fails", "/v1/messages", start + "event: surprise\ndata: {}\n\n", "not described"},
		{"a whole Responses stream passes", "/v1/responses", created + items + completed, ""},
		{"a provider's own event passes through", "/v1/responses", created + "event: response.reasoning_summary_text.delta\ndata: {\"type\":\"response.reasoning_summary_text.delta\",\"sequence_number\":1,\"delta\":\"…\"}\n\n", ""},
		{"a response.created without the report fails", "/v1/responses", strings.Replace(created, `,"secureai":{"served_model":"demo/ok","requested_model":"demo/ok"}`, "", 1) + items + completed, "does not match"},
		{"a text delta without its item fails", "/v1/responses", created + strings.Replace(items, `"item_id":"msg_0_1",`, "", 1) + completed, "does not match"},
		{"a chat stream passes", "/v1/chat/completions", chat, ""},
		{"a chat frame of the wrong object fails", "/v1/chat/completions", strings.Replace(chat, "chat.completion.chunk", "chat.completion", 1), "does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeT{TB: t}
			CheckEvents(ft, "POST", tc.path, []byte(tc.body))
			got := strings.Join(ft.errors, "\n")
			if tc.fails == "" && got != "" {
				t.Errorf("reported %s", got)
			}
			if tc.fails != "" && !strings.Contains(got, tc.fails) {
				t.Errorf("reported %q, want a report containing %q", got, tc.fails)
			}
		})
	}
}
