package classicapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
)

// TestStreamFrames parses the typed frames of SPEC section 5 in order: metadata (served model and
// failover report), chunk frames (chat.completion.chunk objects naming the served model), usage,
// [DONE].
func TestStreamFrames(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, body        string
		served, requested string
		report            []string
	}{
		{"single model", `{"model":"fake/ok","index":"Zero-Knowledge","prompt":"hi","stream":true}`, "fake/ok", "fake/ok", nil},
		{"failover before the first token", `{"models":["fake/cut-before-token","fake/error-503","fake/ok"],"index":"Zero-Knowledge","prompt":"hi","stream":true}`,
			"fake/ok", "fake/cut-before-token", []string{"fake/cut-before-token:failed:connection_error", "fake/error-503:failed:server_error", "fake/ok:served:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.post(t, e.user, tt.body)
			if res.status != 200 || res.header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, Content-Type %q: %s", res.status, res.header.Get("Content-Type"), res.body)
			}
			fs := frames(t, res.body)
			if len(fs) < 4 {
				t.Fatalf("only %d frames: %s", len(fs), res.body)
			}
			// metadata first
			if fs[0].Type != "metadata" {
				t.Fatalf("first frame is %q, want metadata", fs[0].Type)
			}
			var meta map[string]any
			_ = json.Unmarshal(fs[0].Data, &meta)
			md := meta["metadata"].(map[string]any)
			if meta["model"] != tt.served || md["served_model"] != tt.served || md["requested_model"] != tt.requested || meta["success"] != true {
				t.Errorf("metadata frame = %s", fs[0].Data)
			}
			if id, _ := meta["id"].(string); !strings.HasPrefix(id, "chatcmpl-") {
				t.Errorf("metadata id = %v", meta["id"])
			}
			want := metadataKeys
			if tt.report != nil {
				want = append(append([]string{}, want...), "failover")
				checkReport(t, md["failover"], tt.report)
			}
			sameKeys(t, "metadata", md, want)

			// then chunks, the usage frame, [DONE]
			var text strings.Builder
			i := 1
			for ; i < len(fs) && fs[i].Type == "chunk"; i++ {
				var c struct {
					Object  string `json:"object"`
					Model   string `json:"model"`
					Choices []struct {
						Delta struct {
							Content string `json:"content"`
						} `json:"delta"`
					} `json:"choices"`
				}
				if err := json.Unmarshal(fs[i].Data, &c); err != nil {
					t.Fatal(err)
				}
				if c.Object != "chat.completion.chunk" || c.Model != tt.served || len(c.Choices) != 1 {
					t.Errorf("chunk %d = %s (the usage-only chunk must not be a chunk frame)", i, fs[i].Data)
					continue
				}
				text.WriteString(c.Choices[0].Delta.Content)
			}
			if text.String() != openaifake.Answer {
				t.Errorf("streamed text = %q", text.String())
			}
			if i != len(fs)-2 || fs[i].Type != "usage" || !fs[i+1].Done {
				t.Fatalf("after the chunks want usage then [DONE]; got frames from %d: %+v", i, fs[i:])
			}
			var u map[string]any
			_ = json.Unmarshal(fs[i].Data, &u)
			sameKeys(t, "usage", u, usageKeys)
			if u["prompt_tokens"] != float64(12) || u["input_tokens"] != float64(12) || u["completion_tokens"] != u["output_tokens"] {
				t.Errorf("usage = %v", u)
			}
		})
	}
}

// TestStreamInterrupted: after the first token the model is locked in; a cut or malformed chunk
// is an error frame, the stream ends without [DONE], and no failover happens.
func TestStreamInterrupted(t *testing.T) {
	e := newEnv(t)
	for _, model := range []string{"cut", "malformed"} {
		t.Run(model, func(t *testing.T) {
			res := e.post(t, e.user, `{"models":["fake/`+model+`","fake/ok"],"index":"Zero-Knowledge","prompt":"hi","stream":true}`)
			if res.status != 200 {
				t.Fatalf("status %d: %s", res.status, res.body)
			}
			fs := frames(t, res.body)
			if fs[0].Type != "metadata" || fs[1].Type != "chunk" {
				t.Fatalf("frames = %+v", fs)
			}
			last := fs[len(fs)-1]
			if last.Done || last.Type != "error" {
				t.Fatalf("last frame = %+v, want an error frame and no [DONE]", last)
			}
			var p map[string]any
			_ = json.Unmarshal(last.Data, &p)
			if p["success"] != false || p["error"] != "Stream interrupted" || p["message"] == "" || p["code"] == "" || p["request_id"] != res.header.Get("X-Request-Id") {
				t.Errorf("error frame = %s", last.Data)
			}
			for _, f := range fs {
				if f.Done || f.Type == "usage" {
					t.Errorf("an interrupted stream sent %+v", f)
				}
			}
			if e.fake.Calls("ok") != 0 {
				t.Error("failed over after the first token")
			}
		})
	}
}
