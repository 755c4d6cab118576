package cloudbench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/secureai-gateway/gateway/internal/bench/latencybench"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Modes are the requests measured: a plain and a streamed chat request of the benchmark model,
// and a failover (a chain whose first model's upstream answers 500, then the benchmark model).
var Modes = []string{"plain", "stream", "failover"}

// sampleEvents are events/openai-chat-<kind>.json, the API Gateway events of the emulator tests.
var sampleEvents = map[string]string{"plain": "plain", "stream": "streaming", "failover": "failover"}

// requestBody is each mode's chat request.
var requestBody = map[string]string{
	"plain":    `{"model":"` + latencybench.Model + `","messages":[{"role":"user","content":"Hello"}]}`,
	"stream":   `{"model":"` + latencybench.Model + `","stream":true,"messages":[{"role":"user","content":"Hello"}]}`,
	"failover": `{"model":"` + latencybench.FailModel + `","fallback_models":["` + latencybench.Model + `"],"messages":[{"role":"user","content":"Hello"}]}`,
}

// loadEvents reads each mode's sample event and puts the benchmark's request and key in it.
func loadEvents(root, secret string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, mode := range Modes {
		raw, err := os.ReadFile(filepath.Join(root, "events", "openai-chat-"+sampleEvents[mode]+".json"))
		if err != nil {
			return nil, err
		}
		for path, value := range map[string]any{"body": requestBody[mode], "headers.Authorization": "Bearer " + secret,
			"multiValueHeaders.Authorization": []string{"Bearer " + secret}} {
			if raw, err = sjson.SetBytes(raw, path, value); err != nil {
				return nil, err
			}
		}
		out[mode] = raw
	}
	return out, nil
}

// streamSeparator ends the prelude (status and headers) of a streaming function's output.
var streamSeparator = []byte("\x00\x00\x00\x00\x00\x00\x00\x00")

// CheckOutput returns an error unless out, a streaming function's output as the emulator gives
// it (a JSON prelude, 8 NUL bytes, the body) or a buffered proxy response, says 200 and, for a
// stream, ends with [DONE].
func CheckOutput(out []byte, stream bool) error {
	prelude, body, found := bytes.Cut(out, streamSeparator)
	if !found {
		prelude, body = out, []byte(gjson.GetBytes(out, "body").Str)
	}
	if status := gjson.GetBytes(prelude, "statusCode").Int(); status != 200 {
		return fmt.Errorf("status %d: %.300s", status, out)
	}
	if stream && !bytes.HasSuffix(bytes.TrimSpace(body), []byte("data: [DONE]")) {
		return fmt.Errorf("the stream did not end with [DONE]: %.300s", body)
	}
	return nil
}
