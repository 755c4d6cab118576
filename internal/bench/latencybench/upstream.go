// Package latencybench measures what the gateway adds to a request: the same requests are sent
// over loopback HTTP to a zero-delay fake OpenAI upstream directly and through the gateway, and
// the two latency distributions are compared. RunProcess measures the gateway as users run it,
// cmd/gateway as its own process with its store on disk (process.go), with its CPU, memory and
// store growth; Measure is a micro-benchmark of the gateway built in this process without a
// store, with allocations and CPU per request. cmd/bench runs them (make bench); they are not
// part of the tests.
package latencybench

import (
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"
)

// Upstream is a zero-delay OpenAI-compatible handler: a fixed chat.completion, or a stream of
// role, content, finish and usage chunks and [DONE], every chunk flushed as a real provider
// would. A request may ask for a longer stream with the pass-through field "bench_chunks" (the
// number of content chunks); chunks are generated one at a time into a reused buffer, so the
// upstream never holds the whole stream either. A request for upstream model FailUpstreamModel
// is answered 500 with an OpenAI server_error, so a chain can be made to fail over.
type Upstream struct{}

const completionJSON = `{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"fake-small",` +
	`"system_fingerprint":"fp_bench","choices":[{"index":0,"message":{"role":"assistant",` +
	`"content":"Hello! This answer was served by the zero-delay benchmark upstream.","refusal":null},` +
	`"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":14,"total_tokens":26}}`

// failJSON is OpenAI's answer to a request it failed to serve.
const failJSON = `{"error":{"message":"The benchmark upstream fails this model on purpose.","type":"server_error","param":null,"code":null}}`

var (
	chunkHead  = []byte(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"fake-small","system_fingerprint":"fp_bench","choices":[{"index":0,"delta":{`)
	roleDelta  = []byte(`"role":"assistant","content":""`)
	chunkOpen  = []byte(`},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	finishTail = []byte(`},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n")
	usageFrame = []byte(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"fake-small","system_fingerprint":"fp_bench","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":14,"total_tokens":26}}` + "\n\n")
	doneFrame  = []byte("data: [DONE]\n\n")
	words      = []string{"Hello!", " This", " answer", " was", " served", " by", " the", " zero-delay", " benchmark", " upstream."}
)

// DefaultChunks is the number of content chunks of a stream that does not ask for more.
const DefaultChunks = 10

func (Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in [16 << 10]byte
	n := 0
	for n < len(in) {
		m, err := r.Body.Read(in[n:])
		n += m
		if err != nil {
			break
		}
	}
	body := in[:n]
	if gjson.GetBytes(body, "model").Str == FailUpstreamModel {
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(failJSON))
		return
	}
	if !gjson.GetBytes(body, "stream").Bool() {
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{strconv.Itoa(len(completionJSON))}
		_, _ = w.Write([]byte(completionJSON))
		return
	}
	chunks := DefaultChunks
	if c := gjson.GetBytes(body, "bench_chunks"); c.Exists() {
		chunks = int(c.Int())
	}
	h := w.Header()
	h["Content-Type"] = []string{"text/event-stream"}
	h["Cache-Control"] = []string{"no-cache"}
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	buf := make([]byte, 0, 512)
	frame := func(delta []byte, tail []byte) bool {
		buf = append(append(append(buf[:0], chunkHead...), delta...), tail...)
		if _, err := w.Write(buf); err != nil {
			return false
		}
		f.Flush()
		return true
	}
	if !frame(roleDelta, chunkOpen) {
		return
	}
	var delta []byte
	for i := range chunks {
		delta = strconv.AppendQuote(append(delta[:0], `"content":`...), words[i%len(words)])
		if !frame(delta, chunkOpen) {
			return
		}
	}
	if !frame(nil, finishTail) {
		return
	}
	_, _ = w.Write(usageFrame)
	_, _ = w.Write(doneFrame)
}
