package chatanswer

import "testing"

// A stream's every chunk is read here: its cost is paid per token by the Messages and Responses
// surfaces.
func BenchmarkReadChunk(b *testing.B) {
	chunk := []byte(`{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"fake-small","system_fingerprint":"fp_bench","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}]}`)
	b.ReportAllocs()
	for b.Loop() {
		_ = ReadChunk(chunk)
	}
}
