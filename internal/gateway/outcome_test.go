package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
)

// recorder is an Observer that keeps everything it is told.
type recorder struct {
	mu        sync.Mutex
	outcomes  []completion.Outcome
	failovers []completion.Failover
	done      chan struct{}
}

func (r *recorder) FailedOver(_ context.Context, f completion.Failover) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failovers = append(r.failovers, f)
}

func (r *recorder) Finished(_ context.Context, o completion.Outcome) {
	r.mu.Lock()
	r.outcomes = append(r.outcomes, o)
	r.mu.Unlock()
	r.done <- struct{}{}
}

type outcomeEnv struct {
	url, secret string
	keyID       string
	obs         *recorder
}

func newOutcomeEnv(t *testing.T) *outcomeEnv {
	t.Helper()
	up := httptest.NewServer(openaifake.New(300 * time.Millisecond))
	t.Cleanup(up.Close)
	cat := gatewaykit.OneFake(up.URL+"/v1", openaifake.Models...)
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "gateway.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	secret := apikey.NewSecret()
	hash, _ := apikey.Hash(secret)
	key := &apikey.Key{ID: apikey.NewID(), Hash: hash, Prefix: apikey.Prefix(secret), Name: "u", UserID: "u", CreatedAt: time.Now()}
	if err := store.CreateKey(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	obs := &recorder{done: make(chan struct{}, 16)}
	deps := gatewaykit.Deps(cat, store)
	deps.Observer, deps.Idempotency = obs, store
	return &outcomeEnv{url: gatewaykit.Bare(t, deps), secret: secret, keyID: key.ID, obs: obs}
}

// TestOutcomeExactlyOnce: every way a completion can end reaches the observer once, with the
// request id, the key, the served model (or none), usage, the report and the error's kind — on
// both surfaces.
func TestOutcomeExactlyOnce(t *testing.T) {
	type want struct {
		served    string
		kind      fault.Kind
		err       bool
		usage     bool
		attempts  int
		failovers int
	}
	cases := []struct {
		name       string
		chain      string // the chain fields of the body
		stream     bool
		disconnect bool // the caller leaves after the first bytes of the answer
		want       want
	}{
		{"plain served after a failover", `"models":["fake/error-500","fake/ok"]`, false, false, want{served: "fake/ok", usage: true, attempts: 2, failovers: 1}},
		{"plain chain exhausted", `"models":["fake/error-500","fake/error-503"]`, false, false, want{err: true, kind: fault.ChainExhausted, attempts: 2, failovers: 1}},
		{"refused before any attempt", `"model":"fake/not-in-catalog"`, false, false, want{err: true, kind: fault.InvalidRequest}},
		{"provider refusal is final", `"models":["fake/context-length","fake/ok"]`, false, false, want{err: true, kind: fault.UpstreamRejected, attempts: 1}},
		{"stream whole", `"models":["fake/error-429","fake/ok"]`, true, false, want{served: "fake/ok", usage: true, attempts: 2, failovers: 1}},
		{"stream cut after the first token", `"model":"fake/cut"`, true, false, want{served: "fake/cut", err: true, kind: fault.Interrupted}},
		{"stream chain exhausted", `"models":["fake/error-500","fake/error-429"]`, true, false, want{err: true, kind: fault.ChainExhausted, attempts: 2, failovers: 1}},
		{"stream abandoned by the caller", `"model":"fake/stall"`, true, true, want{served: "fake/stall", err: true, kind: fault.Canceled}},
	}
	surfaces := []struct{ name, path, extra string }{
		{"openai", "/v1/chat/completions", `"messages":[{"role":"user","content":"hi"}]`},
		{"classic", "/chat/completions", `"index":"Zero-Knowledge","prompt":"hi"`},
	}
	for _, s := range surfaces {
		for _, tc := range cases {
			t.Run(s.name+"/"+tc.name, func(t *testing.T) {
				e := newOutcomeEnv(t)
				body := "{" + s.extra + "," + tc.chain
				if tc.stream {
					body += `,"stream":true`
				}
				body += "}"
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "POST", e.url+s.path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+e.secret)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				requestID := res.Header.Get("X-Request-Id")
				if tc.disconnect {
					_, _ = res.Body.Read(make([]byte, 1))
					cancel()
				} else {
					_, _ = io.Copy(io.Discard, res.Body)
				}
				res.Body.Close()

				select {
				case <-e.obs.done:
				case <-time.After(10 * time.Second):
					t.Fatal("the observer was never told how the request ended")
				}
				time.Sleep(50 * time.Millisecond) // a second, wrong report would arrive now
				e.obs.mu.Lock()
				defer e.obs.mu.Unlock()
				if len(e.obs.outcomes) != 1 {
					t.Fatalf("observer told %d times, want exactly once: %+v", len(e.obs.outcomes), e.obs.outcomes)
				}
				o := e.obs.outcomes[0]
				if o.RequestID != requestID || o.Key == nil || o.Key.ID != e.keyID || o.Surface != s.name || o.Stream != tc.stream {
					t.Errorf("outcome identity = request %q key %v surface %q stream %v; want %q %q %q %v",
						o.RequestID, o.Key, o.Surface, o.Stream, requestID, e.keyID, s.name, tc.stream)
				}
				if o.Served != tc.want.served || (o.Err != nil) != tc.want.err || (tc.want.err && o.Kind != tc.want.kind) {
					t.Errorf("outcome served %q err %v (kind %v); want served %q, error %v of kind %v", o.Served, o.Err, o.Kind, tc.want.served, tc.want.err, tc.want.kind)
				}
				if (o.Usage != nil) != tc.want.usage {
					t.Errorf("outcome usage %+v, want usage reported: %v", o.Usage, tc.want.usage)
				}
				if len(o.Report.Attempts) != tc.want.attempts && tc.want.attempts > 0 {
					t.Errorf("report %+v, want %d attempts", o.Report, tc.want.attempts)
				}
				if len(e.obs.failovers) != tc.want.failovers {
					t.Errorf("%d failovers heard, want %d", len(e.obs.failovers), tc.want.failovers)
				}
				for _, f := range e.obs.failovers {
					if f.RequestID != requestID || f.Key == nil || f.Key.ID != e.keyID || f.Failed == "" || f.Next == "" {
						t.Errorf("failover %+v lacks the request id, the key or the models", f)
					}
				}
			})
		}
	}
}

// TestOpenAIIdempotencyKey: /v1/chat/completions honours Idempotency-Key as the classic endpoint
// does — a repeat is the first answer byte for byte, not run (nor billed) again; the same key
// with another body is a 422 in the OpenAI envelope.
func TestOpenAIIdempotencyKey(t *testing.T) {
	e := newOutcomeEnv(t)
	post := func(body, key string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", e.url+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.secret)
		req.Header.Set("Idempotency-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	for _, stream := range []bool{false, true} {
		key := "order-" + map[bool]string{false: "plain", true: "stream"}[stream]
		body := `{"models":["fake/error-500","fake/ok"],"messages":[{"role":"user","content":"hi"}]`
		if stream {
			body += `,"stream":true`
		}
		body += "}"
		first, a := post(body, key)
		<-e.obs.done
		again, b := post(body, key)
		if first.StatusCode != 200 || again.StatusCode != 200 || a != b {
			t.Fatalf("stream=%v: first %d, repeat %d; bodies equal %v", stream, first.StatusCode, again.StatusCode, a == b)
		}
		if first.Header.Get(httpapi.ReplayedHeader) != "" || again.Header.Get(httpapi.ReplayedHeader) != "true" {
			t.Errorf("stream=%v: replay header first %q, repeat %q", stream, first.Header.Get(httpapi.ReplayedHeader), again.Header.Get(httpapi.ReplayedHeader))
		}
		other, c := post(strings.Replace(body, `"hi"`, `"bye"`, 1), key)
		if other.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(c, `"code":"idempotency_key_reused"`) || !strings.Contains(c, `"type":"invalid_request_error"`) {
			t.Errorf("stream=%v: reused key with another body: %d %s", stream, other.StatusCode, c)
		}
	}
	time.Sleep(50 * time.Millisecond)
	e.obs.mu.Lock()
	defer e.obs.mu.Unlock()
	if len(e.obs.outcomes) != 2 {
		t.Errorf("%d completions ran, want 2 (replays run nothing)", len(e.obs.outcomes))
	}
}
