package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/provider"
)

const benchCompletion = `{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"fake-small",` +
	`"system_fingerprint":"fp_bench","choices":[{"index":0,"message":{"role":"assistant",` +
	`"content":"Hello! This answer was served by the zero-delay benchmark upstream.","refusal":null},` +
	`"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":14,"total_tokens":26}}`

const benchChunk = `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"fake-small",` +
	`"system_fingerprint":"fp_bench","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}]}` + "\n\n"

// benchBody is a caller's request with gateway extensions and a conversation of about size bytes.
func benchBody(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"bench/small","fallback_models":["bench/other"],"messages":[{"role":"system","content":"You are terse."}`)
	for b.Len() < size {
		b.WriteString(`,{"role":"user","content":"` + strings.Repeat("lorem ipsum dolor sit amet ", 20) + `"}`)
	}
	b.WriteString(`],"max_tokens":64,"temperature":0}`)
	return []byte(b.String())
}

// BenchmarkUpstreamBody is the request passthrough edit: model replaced, extensions removed,
// usage requested on streams.
func BenchmarkUpstreamBody(b *testing.B) {
	for _, size := range []int{200, 100 << 10} {
		for _, stream := range []bool{false, true} {
			name := "body=" + strconv.Itoa(size) + "/stream=" + strconv.FormatBool(stream)
			b.Run(name, func(b *testing.B) {
				req := &provider.Request{Body: benchBody(size), Model: "fake-small"}
				b.ReportAllocs()
				b.SetBytes(int64(len(req.Body)))
				for b.Loop() {
					if _, err := upstreamBody(req, stream); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkStreamRecv is the per-chunk cost of reading a provider stream: SSE parsing, validation
// and inspection. One op is one chunk.
func BenchmarkStreamRecv(b *testing.B) {
	const perBody = 1000
	body := []byte(strings.Repeat(benchChunk, perBody))
	r := bytes.NewReader(body)
	s := newStream(io.NopCloser(r))
	b.ReportAllocs()
	b.SetBytes(int64(len(benchChunk)))
	i := 0
	for b.Loop() {
		if i == perBody {
			r.Reset(body)
			s = newStream(io.NopCloser(r))
			i = 0
		}
		if _, err := s.Recv(); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// memTransport answers every request with a canned response, without a network.
type memTransport struct{ body []byte }

func (t memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(t.body)), ContentLength: int64(len(t.body)), Request: r}, nil
}

// BenchmarkComplete is one non-streamed call through the adapter: body edit, request, reading and
// checking the answer (the transport is in memory).
func BenchmarkComplete(b *testing.B) {
	p, _ := New(provider.Config{BaseURL: "http://upstream.invalid/v1", Client: &http.Client{Transport: memTransport{[]byte(benchCompletion)}}})
	req := &provider.Request{Body: benchBody(200), Model: "fake-small"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
