package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
)

// BenchmarkLocalPlain is one plain chat request through the local gateway as `make run` serves
// it — embedded store, limits, billing, receipts, access log — over loopback HTTP, against an
// in-process fake upstream. Its allocations per request are the figure to watch (the client's and
// the fake's are in them too, the same in every run); `make bench` measures the real process.
func BenchmarkLocalPlain(b *testing.B) {
	g := gatewaykit.ServeFakes(b, "", gatewaykit.Unvalidated())
	// A key's limit is at most 1000 a minute: a fresh key every 900 requests.
	const perKey = 900
	keys := []string{}
	if status, _, body := g.Call(b, "PUT", "/admin/users/bench", g.Admin, `{"monthlyPoints":100000000}`); status != 200 {
		b.Fatalf("setting the bench user's points: %d %s", status, body.Raw)
	}
	for range 10 {
		keys = append(keys, g.NewKey(b, `{"name":"bench","userId":"bench","rateLimit":{"requestsPerMinute":1000,"requestsPerHour":10000},"dailyLimit":100000,"monthlyLimit":100000}`))
	}
	body := gatewaykit.ChatBody(`"model":"other/ok"`)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.ReportAllocs()
	cpu0 := processCPU(b)
	n := 0
	for b.Loop() {
		key := keys[n/perKey%len(keys)]
		n++
		req, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("status %d", res.StatusCode)
		}
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(n), "cpu-ns/op")
}

// processCPU is the process's user and system CPU time so far: on a shared machine a steadier
// figure than the wall time per request.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
