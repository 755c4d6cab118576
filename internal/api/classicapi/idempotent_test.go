package classicapi_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
)

const slowBody = `{"model":"fake/slow-first-token","index":"Zero-Knowledge","prompt":"hi"}`

// TestIdempotentConcurrent: 8 identical requests with one Idempotency-Key, arriving together
// against a slow upstream, make exactly one upstream call and all get the same bytes.
func TestIdempotentConcurrent(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"plain", slowBody},
		{"streaming replays the recorded frames", `{"model":"fake/slow-first-token","index":"Zero-Knowledge","prompt":"hi","stream":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			const n = 8
			res := make([]response, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { res[i] = e.post(t, e.user, tc.body, "Idempotency-Key", "order-42") })
			}
			wg.Wait()
			if got := e.fake.Calls("slow-first-token"); got != 1 {
				t.Errorf("upstream called %d times, want 1", got)
			}
			replayed := 0
			for i, r := range res {
				if r.status != 200 {
					t.Fatalf("response %d: status %d: %s", i, r.status, r.body)
				}
				if !bytes.Equal(r.body, res[0].body) {
					t.Errorf("response %d differs:\n%s\n%s", i, r.body, res[0].body)
				}
				if r.header.Get(httpapi.ReplayedHeader) == "true" {
					replayed++
				}
				if r.header.Get("Content-Type") != res[0].header.Get("Content-Type") {
					t.Errorf("response %d Content-Type %q", i, r.header.Get("Content-Type"))
				}
			}
			if replayed != n-1 {
				t.Errorf("%d responses marked replayed, want %d", replayed, n-1)
			}
			// A later repeat is a replay too; without the key the request runs again.
			if r := e.post(t, e.user, tc.body, "Idempotency-Key", "order-42"); !bytes.Equal(r.body, res[0].body) {
				t.Errorf("later repeat differs: %s", r.body)
			}
			if r := e.post(t, e.user, tc.body); bytes.Equal(r.body, res[0].body) && tc.body == slowBody {
				t.Error("a request without Idempotency-Key got the recorded answer")
			}
			if got := e.fake.Calls("slow-first-token"); got != 2 {
				t.Errorf("upstream called %d times, want 2", got)
			}
		})
	}
}

// TestIdempotencyKeyReuse: the same key with a different body is 422; the same key under another
// API key is a different request.
func TestIdempotencyKeyReuse(t *testing.T) {
	e := newEnv(t)
	ok := `{"model":"fake/ok","index":"Zero-Knowledge","prompt":"hi"}`
	first := e.post(t, e.user, ok, "Idempotency-Key", "k1")
	if first.status != 200 {
		t.Fatalf("status %d: %s", first.status, first.body)
	}
	res := e.post(t, e.user, `{"model":"fake/ok","index":"Zero-Knowledge","prompt":"something else"}`, "Idempotency-Key", "k1")
	if res.status != 422 {
		t.Fatalf("status = %d, want 422: %s", res.status, res.body)
	}
	m := res.json(t)
	if m["success"] != false || m["error"] != "Idempotency key reused" || m["request_id"] == "" {
		t.Errorf("body = %s", res.body)
	}
	other := e.post(t, e.otherKey, ok, "Idempotency-Key", "k1")
	if other.status != 200 || bytes.Equal(other.body, first.body) {
		t.Errorf("another API key got the first key's record: %d %s", other.status, other.body)
	}
	if got := e.fake.Calls("ok"); got != 2 {
		t.Errorf("upstream called %d times, want 2", got)
	}
}

// TestIdempotentFailuresAreNotRecorded: an exhausted chain or an interrupted stream is not
// replayed; the retry runs afresh.
func TestIdempotentFailuresAreNotRecorded(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ name, body, model string }{
		{"exhausted chain", `{"models":["fake/error-500","fake/error-503"],"index":"Zero-Knowledge","prompt":"hi"}`, "error-500"},
		{"interrupted stream", `{"model":"fake/cut","index":"Zero-Knowledge","prompt":"hi","stream":true}`, "cut"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 {
				if r := e.post(t, e.user, tc.body, "Idempotency-Key", strings.ReplaceAll(tc.name, " ", "-")); r.header.Get(httpapi.ReplayedHeader) != "" {
					t.Errorf("a failure was replayed: %s", r.body)
				}
			}
			if got := e.fake.Calls(tc.model); got != 2 {
				t.Errorf("upstream called %d times, want 2", got)
			}
		})
	}
}
