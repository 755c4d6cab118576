package gateway_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
)

// The README's skip_unhealthy example on the local server: three failures of demo/error-500 and
// the fourth request passes over it. Its health goes through the embedded store as the cloud's
// goes through DynamoDB, so a restarted server skips it from its first request.
func TestTheLocalServerSharesHealthThroughItsStore(t *testing.T) {
	cat, stop, err := gateway.Catalog("", true)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	path := filepath.Join(t.TempDir(), "gateway.db")
	const body = `{"models":["demo/error-500","demo/ok"],"redundancy":{"skip_unhealthy":true},"messages":[{"role":"user","content":"hi"}]}`
	var key string
	first := func(s *gatewaykit.Server) string {
		t.Helper()
		status, _, v := s.Call(t, "POST", "/v1/chat/completions", key, body)
		a := v.Get("secureai.failover.attempts.0")
		if status != 200 {
			t.Fatalf("status %d: %s", status, v.Raw)
		}
		return a.Get("status").Str + " " + a.Get("reason").Str
	}
	s := gatewaykit.ServeAt(t, path, cat, gatewaykit.Env())
	key = s.Admin // the store keeps it across the restart
	var got []string
	for range 4 {
		got = append(got, first(s))
	}
	if want := []string{"failed server_error", "failed server_error", "failed server_error", "skipped unhealthy"}; !slices.Equal(got, want) {
		t.Errorf("first attempts %v, want %v", got, want)
	}
	s.Stop() // hands its reports on to the store
	restarted := gatewaykit.ServeAt(t, path, cat, gatewaykit.Env())
	if got := first(restarted); got != "skipped unhealthy" {
		t.Errorf("after a restart the first request's first attempt was %q", got)
	}
}
