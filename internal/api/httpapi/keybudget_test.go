package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// Issue 21 item 14: the routes that read give each key a budget of its own per minute; over it a
// 429 with Retry-After until the minute turns; another key, or the next minute, starts afresh.
func TestAKeysReadBudget(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 15, 30, 0, time.UTC)
	b := &httpapi.KeyBudget{PerMinute: 2, Now: func() time.Time { return now }}
	var refused error
	h := b.Wrap(func(w http.ResponseWriter, _ *http.Request, err error) {
		refused = err
		w.WriteHeader(429)
	}, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) })
	call := func(keyID string) int {
		r := httptest.NewRequest("GET", "/v1/models", nil)
		r = r.WithContext(identity.WithKey(context.Background(), &apikey.Key{ID: keyID}))
		rec := httptest.NewRecorder()
		h(rec, r)
		return rec.Code
	}
	if a, b2, c := call("k1"), call("k1"), call("k1"); a != 200 || b2 != 200 || c != 429 {
		t.Fatalf("three calls of a 2-a-minute key: %d %d %d, want 200 200 429", a, b2, c)
	}
	if f := fault.From(refused); f.K != fault.RateLimited || f.RetryAfter != 30*time.Second {
		t.Errorf("refusal = %v (retry after %v), want RateLimited until the minute turns (30 s)", f.K, f.RetryAfter)
	}
	if call("k2") != 200 {
		t.Error("another key was refused")
	}
	now = now.Add(time.Minute)
	if call("k1") != 200 {
		t.Error("the next minute still refused the key")
	}
}
