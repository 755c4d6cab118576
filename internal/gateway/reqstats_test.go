package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestRequestsOverTime: the local server counts each completed chat request, by surface and
// outcome, and GET /admin/stats/requests shows them in the current minute (last hour) and hour
// (last day and week) once the counts are written (every 200 ms in tests). The exchanges are
// validated against the API description.
func TestRequestsOverTime(t *testing.T) {
	g := newLocalGateway(t, "")
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", chatBody(`"model":"fake/ok"`)},
		{"/v1/chat/completions", chatBody(`"model":"fake/ok"`)},
		{"/v1/chat/completions", chatBody(`"model":"fake/error-500"`)},
		{"/chat/completions", `{"index":"Zero-Knowledge","prompt":"hi","model":"fake/ok"}`},
	} {
		g.call(t, "POST", c.path, g.admin, c.body)
	}
	var hour gjson.Result
	deadline := time.Now().Add(20 * time.Second)
	for {
		var status int
		status, _, hour = g.call(t, "GET", "/admin/stats/requests?range=hour", g.admin, "")
		if status != http.StatusOK {
			t.Fatalf("GET /admin/stats/requests: %d %s", status, hour.Raw)
		}
		if hour.Get("total").Int() >= 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	last := hour.Get("buckets.59")
	if n := len(hour.Get("buckets").Array()); n != 60 || hour.Get("resolution").String() != "minute" {
		t.Fatalf("range=hour has %d buckets of %s, want 60 minutes", n, hour.Get("resolution"))
	}
	// The requests may straddle a minute: the last two buckets hold them.
	prev := hour.Get("buckets.58")
	sum := func(path string) int64 { return last.Get(path).Int() + prev.Get(path).Int() }
	if hour.Get("total").Int() != 4 || sum("openai.served") != 2 || sum("openai.failed") != 1 || sum("classic.served") != 1 || sum("classic.failed") != 0 {
		t.Errorf("the last hour counts %s, want 4 requests: openai 2 served and 1 failed, classic 1 served", hour.Raw)
	}
	for _, r := range []struct {
		name    string
		buckets int
	}{{"day", 24}, {"week", 168}} {
		status, _, body := g.call(t, "GET", "/admin/stats/requests?range="+r.name, g.admin, "")
		if status != http.StatusOK || len(body.Get("buckets").Array()) != r.buckets || body.Get("resolution").String() != "hour" ||
			body.Get("total").Int() != 4 || body.Get("served").Int() != 3 || body.Get("failed").Int() != 1 {
			t.Errorf("range=%s: %d %s, want %d hour buckets counting 3 served and 1 failed", r.name, status, body.Raw, r.buckets)
		}
	}
	if status, _, body := g.call(t, "GET", "/admin/stats/requests?range=year", g.admin, ""); status != http.StatusBadRequest ||
		!strings.Contains(body.Get("message").String(), "hour, day, week") {
		t.Errorf("range=year: %d %s, want a 400 naming the ranges", status, body.Raw)
	}
	key := g.newKey(t, `{"name":"plain"}`)
	if status, _, _ := g.call(t, "GET", "/admin/stats/requests", key, ""); status != http.StatusForbidden {
		t.Errorf("a normal key read the request stats: %d, want 403", status)
	}
}
