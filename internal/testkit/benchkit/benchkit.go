// Package benchkit is the harness of the in-process surface benchmarks (BenchmarkChat,
// BenchmarkMessages, BenchmarkResponses): one endpoint wrapped as the gateway wraps it (request
// id, budget, key check), a completion service over the OpenAI adapter whose upstream is an
// in-memory transport answering a canned chat.completion or chunk stream, and the measuring loop.
// Every surface is measured by the same harness against the same upstream bytes, so their
// figures differ only by what the surface itself does.
package benchkit

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/openai"
)

// Completion is the upstream's plain answer.
const Completion = `{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"fake-small",` +
	`"system_fingerprint":"fp_bench","choices":[{"index":0,"message":{"role":"assistant",` +
	`"content":"Hello! This answer was served by the zero-delay benchmark upstream.","refusal":null},` +
	`"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":14,"total_tokens":26}}`

// StreamChunks is the content chunks of the upstream's streamed answer.
const StreamChunks = 10

// Stream is a streamed answer of contentChunks content chunks: role, content, finish, usage, [DONE].
func Stream(contentChunks int) []byte {
	head := `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"fake-small","system_fingerprint":"fp_bench","choices":[{"index":0,"delta":{`
	var b strings.Builder
	b.WriteString(head + `"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	for range contentChunks {
		b.WriteString(head + `"content":" world"},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	}
	b.WriteString(head + `},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n")
	b.WriteString(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"fake-small","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":14,"total_tokens":26}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// MemTransport answers every upstream call with a canned body, without a network.
type MemTransport struct{ Plain, Stream []byte }

// RoundTrip answers r with the stream when it asks for one, else the plain answer.
func (t MemTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	body, ct := t.Plain, "application/json"
	if r.Header.Get("Accept") == "text/event-stream" {
		body, ct = t.Stream, "text/event-stream"
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: -1, Request: r}, nil
}

type router struct{ route catalog.Route }

func (r router) Route(string) (catalog.Route, error) { return r.route, nil }

type keys struct{ key *apikey.Key }

func (k keys) KeyByHash(context.Context, string) (*apikey.Key, error) { return k.key, nil }

// Model is the catalog name the benchmark requests name.
const Model = "bench/small"

// Service is the completion service over the OpenAI adapter and the in-memory upstream;
// observer, when not nil, hears every request (the local server's metrics), and the service has
// no Tracer (tracing off, as by default).
func Service(b testing.TB, observer completion.Observer) *completion.Service {
	p, err := openai.New(provider.Config{BaseURL: "http://upstream.invalid/v1",
		Client: &http.Client{Transport: MemTransport{Plain: []byte(Completion), Stream: Stream(StreamChunks)}}})
	if err != nil {
		b.Fatal(err)
	}
	route := catalog.Route{Model: &catalog.Model{Name: Model, Provider: "bench", Upstream: "fake-small"}, Provider: p}
	return &completion.Service{Router: router{route}, Engine: chain.Engine{Reserve: 100 * time.Millisecond},
		Settings: chain.ProjectSettings, Observer: observer}
}

// Endpoint wraps h as gateway.endpoint wraps a chat surface: request id, budget, key check.
func Endpoint(render httpapi.Render, h http.Handler) http.Handler {
	k := keys{&apikey.Key{ID: "key_bench", Name: "bench"}}
	return httpapi.WithRequestID(httpapi.WithBudget(5*time.Minute, httpapi.Authenticate(k, render, h)))
}

// Filler is the text of each user turn of a benchmark request.
var Filler = strings.Repeat("lorem ipsum dolor sit amet ", 20)

// discardWriter is a ResponseWriter that keeps nothing but its header map.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header               { return w.h }
func (w *discardWriter) Write(b []byte) (int, error)       { return len(b), nil }
func (w *discardWriter) WriteString(s string) (int, error) { return len(s), nil }
func (w *discardWriter) WriteHeader(status int)            { w.status = status }
func (w *discardWriter) Flush()                            {}

// Run measures h serving body at path, the key sent as a Bearer token, and fails b when the
// endpoint did not answer 200.
func Run(b *testing.B, h http.Handler, path string, body []byte) {
	secret := "sk-" + strings.Repeat("ab", 32)
	rd := bytes.NewReader(body)
	req, _ := http.NewRequest(http.MethodPost, "http://gateway.invalid"+path, io.NopCloser(rd))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.ContentLength = int64(len(body)) // as a client sends it; the body is read to that length
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rd.Reset(body)
		clear(w.h)
		w.status = 0
		h.ServeHTTP(w, req)
	}
	if w.status != http.StatusOK {
		b.Fatalf("status %d: the benchmark measures a refusal, not a completion", w.status)
	}
}
