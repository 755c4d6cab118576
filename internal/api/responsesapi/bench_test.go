package responsesapi

import (
	"strconv"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/metrics"
	"github.com/secureai-gateway/gateway/internal/testkit/benchkit"
)

// benchRequestBody is BenchmarkChat's request in the Responses shape: the same system prompt (as
// instructions) and user turns (as message items), max_output_tokens and temperature.
func benchRequestBody(size int, stream bool) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"bench/small","instructions":"You are terse.","input":[`)
	for first := true; b.Len() < size || first; first = false {
		if !first {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"message","role":"user","content":"` + benchkit.Filler + `"}`)
	}
	b.WriteString(`],"max_output_tokens":64,"temperature":0,"store":false`)
	if stream {
		b.WriteString(`,"stream":true`)
	}
	b.WriteString("}")
	return []byte(b.String())
}

// BenchmarkResponses is BenchmarkChat on the Responses surface: one request through the endpoint
// (request id, budget, key check, the translation to a chat body, plan, the OpenAI adapter, the
// answer written as the Response object or its event stream) with the same in-memory upstream.
func BenchmarkResponses(b *testing.B) {
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
					benchkit.Run(b, benchkit.Endpoint(Render, httpapi.Serve(Render, h.Responses)), "/v1/responses", benchRequestBody(size, stream))
				})
			}
		}
	}
}
