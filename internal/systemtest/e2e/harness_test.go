package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/local/localserver"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
	"github.com/secureai-gateway/gateway/internal/testkit/openapitest"
	"github.com/tidwall/gjson"
)

// slowFirstToken is the fake's "slow-first-token" delay: past every test's first-token timeout
// (500 ms) and attempt timeout (1000 ms), far below the client bound.
const slowFirstToken = 2 * time.Second

// clientBound bounds every HTTP exchange of a test: nothing may hang.
const clientBound = 15 * time.Second

// fast keeps fault tests quick: an attempt gets 1 s, a stream's first token 500 ms.
const fast = `{"timeout_ms":1000,"first_token_timeout_ms":500}`

// keyStore is an in-memory identity.KeyFinder.
type keyStore struct {
	mu   sync.Mutex
	keys map[string]*apikey.Key
}

func (s *keyStore) KeyByHash(_ context.Context, hash string) (*apikey.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[hash]
	if !ok {
		return nil, apikey.ErrNotFound
	}
	c := *k
	return &c, nil
}

// add stores a fresh key shaped by edit and returns its secret.
func (s *keyStore) add(t *testing.T, edit func(*apikey.Key)) string {
	t.Helper()
	secret := apikey.NewSecret()
	hash, err := apikey.Hash(secret)
	if err != nil {
		t.Fatal(err)
	}
	k := &apikey.Key{ID: apikey.NewID(), Hash: hash, Prefix: apikey.Prefix(secret), Name: "test", UserID: "u1", CreatedAt: time.Now()}
	if edit != nil {
		edit(k)
	}
	s.mu.Lock()
	s.keys[hash] = k
	s.mu.Unlock()
	return secret
}

type envConfig struct {
	budget  time.Duration
	maxBody int64
	// keepAlive is the interval of a waiting stream's keep-alives, as the cloud sets it per
	// request (0: none, as locally).
	keepAlive time.Duration
}

// env is one assembled gateway in front of its own fake upstreams.
type env struct {
	up          *gatewaykit.Upstream
	upstreamURL string    // the fake's base URL, with /v1
	anth        *wireFake // the Anthropic-wire fake ("anth/…")
	resp        *wireFake // the Responses-wire fake ("resp/…", and "respoff/…" not marked responses: true)
	url         string    // the gateway's
	keys        *keyStore
	secret      string // a plain, usable key
}

// Fault models are "fake/<behaviour>" at upstreamURL (with /v1); "down/refused" points at a closed port; "fake/hang-2" and
// "fake/hang-3" are more hanging models, for chains of distinct names; "fake/error-429-b" is a second 429 without
// Retry-After. "anth/<behaviour>" are the Anthropic-wire fake's at anthURL, "resp/<behaviour>" the Responses-wire fake's
// at respURL (marked responses: true), "respoff/<behaviour>" the same fake as a provider not so marked.
func testCatalog(t *testing.T, upstreamURL, anthURL, respURL string) *catalog.Catalog {
	t.Helper()
	c := &catalog.Catalog{
		Providers: map[string]catalog.ProviderConfig{
			"fake":    {Type: "openai", BaseURL: upstreamURL},
			"down":    {Type: "openai", BaseURL: "http://" + closedPort(t) + "/v1"},
			"anth":    {Type: "anthropic", BaseURL: anthURL, APIKeyEnv: anthKeyEnv},
			"resp":    {Type: "openai", BaseURL: respURL + "/v1", Responses: true},
			"respoff": {Type: "openai", BaseURL: respURL + "/v1"},
		},
		Models: map[string]*catalog.Model{},
	}
	add := func(name, provider, upstream string) {
		c.Models[name] = &catalog.Model{Name: name, Provider: provider, Upstream: upstream, Regions: []string{"local"}}
	}
	for _, m := range openaifake.Models {
		add("fake/"+m, "fake", m)
	}
	add("fake/hang-2", "fake", "hang")
	add("fake/hang-3", "fake", "hang")
	add("fake/error-429-b", "fake", "error-429")
	add("down/refused", "down", "ok")
	for _, m := range anthModels {
		add("anth/"+m, "anth", m)
	}
	for _, m := range respModels {
		add("resp/"+m, "resp", m)
		add("respoff/"+m, "respoff", m)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func newEnv(t *testing.T, opts ...func(*envConfig)) *env {
	t.Helper()
	cfg := envConfig{budget: 30 * time.Second, maxBody: 1 << 20}
	for _, o := range opts {
		o(&cfg)
	}
	up := gatewaykit.NewUpstream(openaifake.New(slowFirstToken))
	up.Arrivals = make(chan gatewaykit.UpstreamCall, 64)
	e := &env{up: up, upstreamURL: up.Serve(t, "fake"), keys: &keyStore{keys: map[string]*apikey.Key{}}}
	anth, anthURL := newWireFake(t, serveAnthropic)
	resp, respURL := newWireFake(t, serveResponses(openaifake.New(slowFirstToken)))
	e.anth, e.resp = anth, resp
	deps := gatewaykit.Deps(testCatalog(t, e.upstreamURL, anthURL, respURL), e.keys)
	deps.Credential = func(name string) string {
		if name == anthKeyEnv {
			return anthKey
		}
		return ""
	}
	deps.Budget, deps.MaxBody, deps.Engine.Reserve = cfg.budget, cfg.maxBody, 100*time.Millisecond
	e.url = serve(t, deps, cfg.keepAlive)
	e.secret = e.keys.add(t, nil)
	return e
}

// serve starts the assembled gateway on a loopback port closed when t ends and returns its URL.
// Every exchange on a route docs/openapi.yaml describes is validated against it; a route it does
// not describe yet is served as it is.
func serve(t *testing.T, deps gateway.Deps, keepAlive time.Duration) string {
	t.Helper()
	gw, err := localserver.NewGateway(deps)
	if err != nil {
		t.Fatal(err)
	}
	mux := gw.Mux()
	validated := openapitest.Handler(t, mux)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if keepAlive > 0 {
			r = r.WithContext(httpapi.WithKeepAlive(r.Context(), keepAlive))
		}
		if openapitest.Documented(r) {
			validated.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// result is one answered request.
type result struct {
	status  int
	header  http.Header
	body    []byte        // plain answers
	frames  []string      // streamed answers: each data payload, [DONE] included
	events  []string      // streamed answers: each frame's event name ("" when it had none)
	elapsed time.Duration // until the whole answer was read
}

func (r *result) json() gjson.Result { return gjson.ParseBytes(r.body) }

// done reports whether the stream ended with the terminator.
func (r *result) done() bool { return len(r.frames) > 0 && r.frames[len(r.frames)-1] == "[DONE]" }

// chunks are the streamed chat.completion.chunk objects (error frames and [DONE] excluded).
func (r *result) chunks() []gjson.Result {
	var out []gjson.Result
	for _, f := range r.frames {
		if f != "[DONE]" && !gjson.Get(f, "error").Exists() {
			out = append(out, gjson.Parse(f))
		}
	}
	return out
}

// do sends body to /v1/chat/completions with secret (none when empty) and reads the whole answer,
// bounded by clientBound.
func (e *env) do(t *testing.T, ctx context.Context, secret, body string) *result {
	t.Helper()
	return e.post(t, ctx, "/v1/chat/completions", body, http.Header{"Authorization": {"Bearer " + secret}})
}

// post sends body to path with header (an empty Authorization is left out) and reads the whole
// answer, bounded by clientBound.
func (e *env) post(t *testing.T, ctx context.Context, path, body string, header http.Header) *result {
	t.Helper()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, clientBound)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		if k != "Authorization" || v[0] != "Bearer " {
			req.Header[k] = v
		}
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("request failed after %s: %v", time.Since(start), err)
	}
	defer resp.Body.Close()
	r := &result{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			if name, ok := strings.CutPrefix(line, "event: "); ok {
				event = name
			} else if d, ok := strings.CutPrefix(line, "data: "); ok {
				r.frames, r.events = append(r.frames, d), append(r.events, event)
			} else if line == "" {
				event = ""
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("reading the stream after %s: %v (frames so far: %q)", time.Since(start), err, r.frames)
		}
	} else if r.body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("reading the answer after %s: %v", time.Since(start), err)
	}
	r.elapsed = time.Since(start)
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("status %d answer has no X-Request-Id", resp.StatusCode)
	}
	return r
}

// chat sends body with the env's usable key.
func (e *env) chat(t *testing.T, body string) *result {
	t.Helper()
	return e.do(t, nil, e.secret, body)
}

// chatBody builds a request: models is the chain (as `models`), extra members are merged in.
func chatBody(t *testing.T, models []string, stream bool, extra map[string]any) string {
	t.Helper()
	m := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Say hello"}}}
	switch len(models) {
	case 0:
	case 1:
		m["model"] = models[0]
	default:
		m["models"] = models
	}
	if stream {
		m["stream"] = true
	}
	for k, v := range extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// attempt is the part of a failover report line a test can predict.
type attempt struct {
	Model  string
	Status string
	Reason string
}

func attemptsOf(v gjson.Result) []attempt {
	var out []attempt
	for _, a := range v.Array() {
		out = append(out, attempt{Model: a.Get("model").String(), Status: a.Get("status").String(), Reason: a.Get("reason").String()})
		if !a.Get("latency_ms").Exists() {
			out[len(out)-1].Reason += " (latency_ms missing)"
		}
	}
	return out
}

func failed(model, reason string) attempt {
	return attempt{Model: model, Status: "failed", Reason: reason}
}
func served(model string) attempt { return attempt{Model: model, Status: "served"} }

func equalAttempts(a, b []attempt) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func ioCopy(b *strings.Builder, resp *http.Response) (int64, error) { return io.Copy(b, resp.Body) }

func gjsonIDs(body string) []string {
	var out []string
	for _, m := range gjson.Get(body, "data").Array() {
		out = append(out, m.Get("id").String())
	}
	return out
}

// doQuiet sends body and reads whatever comes until ctx ends; errors are expected and ignored.
// firstFrame, when not nil, is closed once the first data frame has arrived.
func doQuiet(ctx context.Context, e *env, body string, firstFrame chan struct{}) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+e.secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if firstFrame != nil && strings.HasPrefix(sc.Text(), "data: ") {
			close(firstFrame)
			firstFrame = nil
		}
	}
	return sc.Err()
}
