package openaiapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/metrics"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/openai"
)

const benchCompletion = `{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"fake-small",` +
	`"system_fingerprint":"fp_bench","choices":[{"index":0,"message":{"role":"assistant",` +
	`"content":"Hello! This answer was served by the zero-delay benchmark upstream.","refusal":null},` +
	`"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":14,"total_tokens":26}}`

func benchStream(contentChunks int) []byte {
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

// memTransport answers every upstream call with a canned body, without a network.
type memTransport struct{ plain, stream []byte }

func (t memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	body, ct := t.plain, "application/json"
	if r.Header.Get("Accept") == "text/event-stream" {
		body, ct = t.stream, "text/event-stream"
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: -1, Request: r}, nil
}

type benchRouter struct{ route catalog.Route }

func (r benchRouter) Route(string) (catalog.Route, error) { return r.route, nil }

type benchKeys struct{ key *apikey.Key }

func (k benchKeys) KeyByHash(context.Context, string) (*apikey.Key, error) { return k.key, nil }

// discardWriter is a ResponseWriter that keeps nothing but its header map.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteString(s string) (int, error) {
	return len(s), nil
}
func (w *discardWriter) WriteHeader(status int) { w.status = status }
func (w *discardWriter) Flush()                 {}

// benchHandler is the endpoint over the in-memory upstream; observer, when not nil, hears every
// request (the local server's metrics), and the service has no Tracer (tracing off).
func benchHandler(b *testing.B, observer completion.Observer) http.Handler {
	p, err := openai.New(provider.Config{BaseURL: "http://upstream.invalid/v1",
		Client: &http.Client{Transport: memTransport{plain: []byte(benchCompletion), stream: benchStream(10)}}})
	if err != nil {
		b.Fatal(err)
	}
	route := catalog.Route{Model: &catalog.Model{Name: "bench/small", Provider: "bench", Upstream: "fake-small"}, Provider: p}
	h := &Handler{Completions: &completion.Service{Router: benchRouter{route}, Engine: chain.Engine{Reserve: 100 * time.Millisecond},
		Settings: chain.ProjectSettings, Observer: observer}, MaxBody: 8 << 20}
	keys := benchKeys{&apikey.Key{ID: "key_bench", Name: "bench"}}
	// The endpoint exactly as gateway.endpoint wraps it.
	return httpapi.WithRequestID(httpapi.WithBudget(5*time.Minute, httpapi.Authenticate(keys, Render, http.HandlerFunc(h.Chat))))
}

func benchRequestBody(size int, stream bool) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"bench/small","messages":[{"role":"system","content":"You are terse."}`)
	for b.Len() < size {
		b.WriteString(`,{"role":"user","content":"` + strings.Repeat("lorem ipsum dolor sit amet ", 20) + `"}`)
	}
	b.WriteString(`],"max_tokens":64,"temperature":0`)
	if stream {
		b.WriteString(`,"stream":true,"stream_options":{"include_usage":true}`)
	}
	b.WriteString("}")
	return []byte(b.String())
}

// BenchmarkChat is one chat completion through the endpoint (request id, budget, key check,
// parse, plan, the OpenAI adapter and the response rewrite) with an in-memory upstream: what the
// gateway's own code costs per request, without the network. metrics=prometheus adds the local
// server's metrics output as the completion observer (tracing stays off, as it is by default).
func BenchmarkChat(b *testing.B) {
	secret := "sk-" + strings.Repeat("ab", 32)
	for _, size := range []int{200, 100 << 10} {
		for _, stream := range []bool{false, true} {
			for _, observed := range []bool{false, true} {
				name := "body=" + strconv.Itoa(size) + "/stream=" + strconv.FormatBool(stream)
				var observer completion.Observer
				if observed {
					name += "/metrics=prometheus"
					observer = metrics.NewPrometheus(nil)
				}
				b.Run(name, func(b *testing.B) {
					h := benchHandler(b, observer)
					body := benchRequestBody(size, stream)
					rd := bytes.NewReader(body)
					req, _ := http.NewRequest(http.MethodPost, "http://gateway.invalid/v1/chat/completions", io.NopCloser(rd))
					req.Header.Set("Authorization", "Bearer "+secret)
					req.ContentLength = int64(len(body)) // as a client sends it; the body is read to that length
					w := &discardWriter{h: http.Header{}}
					b.ReportAllocs()
					b.SetBytes(int64(len(body)))
					for b.Loop() {
						rd.Reset(body)
						clear(w.h)
						h.ServeHTTP(w, req)
					}
					if w.status != http.StatusOK {
						b.Fatalf("status %d: the benchmark measures a refusal, not a completion", w.status)
					}
				})
			}
		}
	}
}
