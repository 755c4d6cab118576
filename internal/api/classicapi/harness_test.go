package classicapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
)

// env is a gateway on the embedded store in front of a fake upstream whose model names choose
// its faults; every fake model is in the catalog as "fake/<name>".
type env struct {
	url      string
	fake     *openaifake.Server
	up       *gatewaykit.Upstream
	user     string // secret of a normal key (userId "u1")
	admin    string // secret of an admin key
	otherKey string // secret of a second normal key (userId "u2")
}

func newEnv(t *testing.T) *env {
	t.Helper()
	up := gatewaykit.NewUpstream(openaifake.New(300 * time.Millisecond))
	cat := gatewaykit.OneFake(up.Serve(t, "fake"), openaifake.Models...)
	for _, m := range cat.Models {
		m.Regions, m.Points = []string{"local"}, 1
	}
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "gateway.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := &env{fake: up.Fake, up: up}
	e.user = addKey(t, store, "u1", false)
	e.admin = addKey(t, store, "admin", true)
	e.otherKey = addKey(t, store, "u2", false)
	deps := gatewaykit.Deps(cat, store)
	deps.Idempotency = store
	e.url = gatewaykit.Bare(t, deps)
	return e
}

// lastBody is the last request body model received upstream.
func (e *env) lastBody(model string) []byte { return e.up.LastBody(model) }

func addKey(t *testing.T, store *boltstore.Store, user string, admin bool) string {
	t.Helper()
	secret := apikey.NewSecret()
	hash, _ := apikey.Hash(secret)
	k := &apikey.Key{ID: apikey.NewID(), Hash: hash, Prefix: apikey.Prefix(secret), Name: user, UserID: user, Admin: admin, CreatedAt: time.Now()}
	if err := store.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	return secret
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a generic map.
func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not JSON (%v): %s", err, r.body)
	}
	return m
}

// post sends body to POST /chat/completions with the key secret and extra headers (name, value pairs).
func (e *env) post(t *testing.T, secret, body string, headers ...string) response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.url+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// frame is one classic SSE data line: {"type", "data"} or the [DONE] terminator.
type frame struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
	Done bool            `json:"-"`
}

func frames(t *testing.T, body []byte) []frame {
	t.Helper()
	var out []frame
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("unexpected SSE line %q", line)
		}
		if data == "[DONE]" {
			out = append(out, frame{Done: true})
			continue
		}
		var f frame
		if err := json.Unmarshal([]byte(data), &f); err != nil {
			t.Fatalf("frame is not JSON (%v): %s", err, data)
		}
		out = append(out, f)
	}
	return out
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
