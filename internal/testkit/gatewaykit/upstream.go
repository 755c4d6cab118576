package gatewaykit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
)

// UpstreamCall is one request a fake provider received, as it arrived.
type UpstreamCall struct {
	Provider string
	Body     []byte
	Header   http.Header
	// Ctx is the request's context: done when the gateway let go of the call.
	Ctx context.Context
	// Ended receives the time the fake's handler returned.
	Ended chan time.Time
}

// Model is the upstream model the call asked for.
func (c UpstreamCall) Model() string { return gjson.GetBytes(c.Body, "model").String() }

// Upstream records what reaches the fault-injecting fake before the fake answers it.
type Upstream struct {
	Fake *openaifake.Server
	// Arrivals, when not nil, is told of each call as it arrives (not when it is full), for a
	// test that waits for a call.
	Arrivals chan UpstreamCall
	mu       sync.Mutex
	calls    []UpstreamCall
}

// NewUpstream records in front of fake.
func NewUpstream(fake *openaifake.Server) *Upstream { return &Upstream{Fake: fake} }

// Handler is the fake as provider sees it, each request recorded under provider's name.
func (u *Upstream) Handler(provider string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c := UpstreamCall{Provider: provider, Body: body, Header: r.Header.Clone(), Ctx: r.Context(), Ended: make(chan time.Time, 1)}
		u.mu.Lock()
		u.calls = append(u.calls, c)
		u.mu.Unlock()
		select {
		case u.Arrivals <- c:
		default:
		}
		defer func() { c.Ended <- time.Now() }()
		r.Body = io.NopCloser(bytes.NewReader(body))
		u.Fake.ServeHTTP(w, r)
	})
}

// Serve starts the recorded fake as provider on a loopback port, closed when t ends, and returns
// its base URL (with /v1).
func (u *Upstream) Serve(t testing.TB, provider string) string {
	t.Helper()
	srv := httptest.NewServer(u.Handler(provider))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// Calls is every request recorded so far, in order.
func (u *Upstream) Calls() []UpstreamCall {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]UpstreamCall(nil), u.calls...)
}

// LastBody is the body of the last request for upstream model (its "model" member), nil when none
// came.
func (u *Upstream) LastBody(model string) []byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := len(u.calls) - 1; i >= 0; i-- {
		if u.calls[i].Model() == model {
			return u.calls[i].Body
		}
	}
	return nil
}

// Fakes is the catalog most gateway tests use: two fake providers in front of one recorded
// fault-injecting fake (first token after 300 ms for its slow models) — "fake" opts in to
// entitlement tokens, "other" does not — each serving every openaifake model as
// "<provider>/<model>" in us-east-1. Models cost points: error-500 5, everything else 1.
// policies (none when "") are the catalog's SMLTP policies.
func Fakes(t testing.TB, policies string) (*catalog.Catalog, *Upstream) {
	t.Helper()
	up := NewUpstream(openaifake.New(300 * time.Millisecond))
	cat := &catalog.Catalog{
		Providers: map[string]catalog.ProviderConfig{
			"fake":  {Type: "openai", BaseURL: up.Serve(t, "fake"), ReceiveEntitlement: true},
			"other": {Type: "openai", BaseURL: up.Serve(t, "other")},
		},
		Models: map[string]*catalog.Model{},
	}
	if policies != "" {
		cat.SMLTPPolicies = json.RawMessage(policies)
	}
	for _, p := range []string{"fake", "other"} {
		for _, m := range openaifake.Models {
			points := 1
			if m == "error-500" {
				points = 5
			}
			cat.Models[p+"/"+m] = &catalog.Model{Name: p + "/" + m, Provider: p, Upstream: m, Regions: []string{"us-east-1"}, Points: points}
		}
	}
	return cat, up
}

// ServeFakes is Serve over Fakes(t, policies) with the test environment.
func ServeFakes(t testing.TB, policies string, opts ...Option) *Server {
	t.Helper()
	cat, up := Fakes(t, policies)
	return Serve(t, cat, Env(), append(opts, WithUpstream(up))...)
}
