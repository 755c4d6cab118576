package openaiapi

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/metrics"
	"github.com/secureai-gateway/gateway/internal/testkit/benchkit"
)

func benchRequestBody(size int, stream bool) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"bench/small","messages":[{"role":"system","content":"You are terse."}`)
	for b.Len() < size {
		b.WriteString(`,{"role":"user","content":"` + benchkit.Filler + `"}`)
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
// BenchmarkMessages and BenchmarkResponses measure the agent surfaces with the same harness.
func BenchmarkChat(b *testing.B) {
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
					h := &Handler{Completions: benchkit.Service(b, observer), MaxBody: 8 << 20}
					benchkit.Run(b, benchkit.Endpoint(Render, http.HandlerFunc(h.Chat)), "/v1/chat/completions", benchRequestBody(size, stream))
				})
			}
		}
	}
}
