package e2e

import (
	"strings"
	"testing"
	"time"
)

// A stream still waiting for its first content token after the keep-alive interval (in the cloud,
// inside API Gateway's idle limit) is committed and kept alive with SSE comments, which every
// surface's clients ignore: a chain that then serves streams its answer whole, and one that then
// fails ends with the surface's own error event — never a stream that looks finished.
func TestKeepAliveWhileTheFirstTokenIsAwaited(t *testing.T) {
	e := newEnv(t, func(c *envConfig) { c.keepAlive = 300 * time.Millisecond })
	for _, s := range surfaces {
		t.Run(s.name+"/served", func(t *testing.T) {
			r := e.post(t, nil, s.path, s.request("fake/slow-first-token", "fake/ok", true, `{"first_token_timeout_ms":10000,"timeout_ms":20000}`, false), bearer(e.secret))
			v := s.stream(r)
			if r.status != 200 || !v.whole || v.model != "fake/slow-first-token" || len(v.problems) > 0 {
				t.Errorf("status %d whole %v model %q problems %v, want the slow model's whole answer", r.status, v.whole, v.model, v.problems)
			}
		})
		t.Run(s.name+"/failed", func(t *testing.T) {
			r := e.post(t, nil, s.path, s.request("fake/hang", "fake/hang", true, `{"timeout_ms":1000}`, false), bearer(e.secret))
			v := s.stream(r)
			if r.status != 200 || v.whole || !v.failure.Exists() {
				t.Errorf("status %d whole %v failure %s (frames %q), want a committed stream ending with the surface's error event", r.status, v.whole, v.failure.Raw, r.frames)
			}
			if !strings.Contains(strings.ToLower(v.failure.Raw), "timeout") && !strings.Contains(v.failure.Raw, "attempt") {
				t.Errorf("the error event %s does not say what failed", v.failure.Raw)
			}
		})
	}
}
