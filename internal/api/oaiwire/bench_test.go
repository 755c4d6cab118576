package oaiwire

import (
	"io"
	"testing"
)

var (
	benchChunk = []byte(`{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"fake-small",` +
		`"system_fingerprint":"fp_bench","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}]}`)
	benchCompletion = []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"fake-small",` +
		`"system_fingerprint":"fp_bench","choices":[{"index":0,"message":{"role":"assistant",` +
		`"content":"Hello! This answer was served by the zero-delay benchmark upstream.","refusal":null},` +
		`"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":14,"total_tokens":26}}`)
	benchSecureai = []byte(`{"served_model":"bench/small","requested_model":"bench/small"}`)
)

// BenchmarkWriteObjectChunk is the per-chunk rewrite of a stream (no report: it rides on the
// first chunk only).
func BenchmarkWriteObjectChunk(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchChunk)))
	for b.Loop() {
		if err := WriteObject(io.Discard, benchChunk, "bench/small", "secureai", nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteObjectFirstChunk is the first chunk, which carries the gateway's report.
func BenchmarkWriteObjectFirstChunk(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchChunk)))
	for b.Loop() {
		if err := WriteObject(io.Discard, benchChunk, "bench/small", "secureai", benchSecureai); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteObjectCompletion is the rewrite of a non-streamed chat.completion.
func BenchmarkWriteObjectCompletion(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchCompletion)))
	for b.Loop() {
		if err := WriteObject(io.Discard, benchCompletion, "bench/small", "secureai", benchSecureai); err != nil {
			b.Fatal(err)
		}
	}
}
