package verify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/entitlement"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/verify"
)

// gateway is the signing side, as the gateway runs it.
type gateway struct {
	keys   signing.Keyset
	signer *signing.Signer
	jwks   *httptest.Server
	minter *entitlement.Minter
}

func newGateway(t *testing.T) *gateway {
	t.Helper()
	ks, err := signing.NewKeyset(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{keys: ks}
	g.use(t, ks)
	g.jwks = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(g.signer.JWKS())
	}))
	t.Cleanup(g.jwks.Close)
	return g
}

func (g *gateway) use(t *testing.T, ks signing.Keyset) {
	t.Helper()
	s, err := signing.NewSigner(ks, entitlement.Type)
	if err != nil {
		t.Fatal(err)
	}
	g.keys, g.signer, g.minter = ks, s, &entitlement.Minter{Signer: s}
}

func (g *gateway) mint(t *testing.T, model, provider string, body []byte) string {
	t.Helper()
	tok, err := g.minter.Mint(entitlement.Attempt{KeyID: "key_1", Model: model, Provider: provider, PolicyHash: "abc", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Compact
}

// modelServer is a custom OpenAI-compatible provider that serves only calls the gateway entitled:
// the catalog names it "custom", so the model "ok" is "custom/ok" in the gateway's words.
func modelServer(t *testing.T, v *verify.Verifier) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		raw, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		if err := json.Unmarshal(raw, &req); err != nil {
			http.Error(w, `{"error":{"message":"bad json"}}`, 400)
			return
		}
		if _, _, err := v.VerifyRequest(r, "custom/"+req.Model); err != nil {
			var ve *verify.Error
			errors.As(err, &ve)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": err.Error(), "type": "invalid_request_error", "code": string(ve.Reason)}})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"`+req.Model+`","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func call(t *testing.T, srv *httptest.Server, token string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set(verify.Header, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.Error.Code
}

func TestModelServer(t *testing.T) {
	g := newGateway(t)
	v := &verify.Verifier{Keys: verify.NewRemoteJWKS(g.jwks.URL, nil), Audience: "custom", Replay: verify.NewMemoryReplayCache(0)}
	srv := modelServer(t, v)
	body := []byte(`{"model":"ok","messages":[{"role":"user","content":"hi"}]}`)

	honest := g.mint(t, "custom/ok", "custom", body)
	if status, code := call(t, srv, honest, body); status != 200 {
		t.Fatalf("the honest call got %d (%s)", status, code)
	}
	changed := bytes.Replace(body, []byte("hi"), []byte("hI"), 1)
	otherKeys := newGateway(t)
	tests := []struct {
		name  string
		token string
		body  []byte
		want  verify.Reason
	}{
		{"a replayed token is refused", honest, body, verify.Replayed},
		{"a token for another model is refused", g.mint(t, "custom/other", "custom", body), body, verify.WrongModel},
		{"a body changed by one byte is refused", g.mint(t, "custom/ok", "custom", body), changed, verify.BodyMismatch},
		{"a token for another provider is refused", g.mint(t, "custom/ok", "openai", body), body, verify.WrongAudience},
		{"a token signed by another gateway is refused", otherKeys.mint(t, "custom/ok", "custom", body), body, verify.UnknownKey},
		{"garbage is refused", "not.a.token", body, verify.Malformed},
		{"no token is refused", "", body, verify.Malformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, code := call(t, srv, tt.token, tt.body); status != 401 || code != string(tt.want) {
				t.Errorf("got %d %q, want 401 %q", status, code, tt.want)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	g := newGateway(t)
	body := []byte(`{}`)
	keys, err := verify.StaticJWKS(mustGet(t, g.jwks.URL))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tests := []struct {
		name  string
		token func() string
		clock time.Time
		want  verify.Reason
	}{
		{"an expired token is refused", func() string { return g.mint(t, "m", "p", body) }, now.Add(entitlement.DefaultTTL + time.Minute), verify.Expired},
		{"a token from the future is refused", func() string { return g.mint(t, "m", "p", body) }, now.Add(-time.Minute), verify.Expired},
		{"a signature over other claims is refused", func() string {
			tok := strings.Split(g.mint(t, "m", "p", body), ".")
			other := strings.Split(g.mint(t, "m", "p", body), ".")
			return tok[0] + "." + other[1] + "." + tok[2]
		}, now, verify.BadSignature},
		{"another signed type is refused", func() string {
			s, _ := signing.NewSigner(g.keys, "secureai-receipt+jws")
			tok, _ := s.Sign("secureai-receipt+jws", map[string]any{"jti": "x", "exp": now.Add(time.Minute).Unix(), "aud": "p", "model": "m"})
			return tok
		}, now, verify.Malformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &verify.Verifier{Keys: keys, Audience: "p", Replay: verify.NewMemoryReplayCache(0), Now: func() time.Time { return tt.clock }}
			_, err := v.Verify(context.Background(), tt.token(), "m", body)
			var ve *verify.Error
			if !errors.As(err, &ve) || ve.Reason != tt.want {
				t.Errorf("err = %v, want reason %s", err, tt.want)
			}
		})
	}
}

// TestRotationIsSeenThroughACachedJWKS: a verifier that fetched the JWKS before a rotation accepts
// tokens signed after it (the new key was published as next) and before it (kept as previous).
func TestRotationIsSeenThroughACachedJWKS(t *testing.T) {
	g := newGateway(t)
	var fetches atomic.Int32
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		g.jwks.Config.Handler.ServeHTTP(w, r)
	}))
	defer jwks.Close()
	v := &verify.Verifier{Keys: verify.NewRemoteJWKS(jwks.URL, nil), Audience: "p", Replay: verify.NewMemoryReplayCache(0)}
	body := []byte(`{}`)
	before := g.mint(t, "m", "p", body)
	if _, err := v.Verify(context.Background(), before, "m", body); err != nil {
		t.Fatal(err)
	}
	rotated, err := g.keys.Rotate(time.Now(), 3)
	if err != nil {
		t.Fatal(err)
	}
	oldSigner := g.minter
	g.use(t, rotated)
	for name, tok := range map[string]string{"after": g.mint(t, "m", "p", body), "before, from a not yet restarted instance": mintWith(t, oldSigner, body)} {
		if _, err := v.Verify(context.Background(), tok, "m", body); err != nil {
			t.Errorf("token signed %s the rotation: %v", name, err)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("the JWKS was fetched %d times, want 1 (the cached one already had the new key)", n)
	}
}

func mintWith(t *testing.T, m *entitlement.Minter, body []byte) string {
	t.Helper()
	tok, err := m.Mint(entitlement.Attempt{Model: "m", Provider: "p", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Compact
}

func mustGet(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return raw
}

// A refused receipt says "receipt", not "entitlement token", whatever the check that refused it.
func TestAReceiptRefusalNamesAReceipt(t *testing.T) {
	g := newGateway(t)
	keys, err := verify.StaticJWKS(jwksOf(t, g))
	if err != nil {
		t.Fatal(err)
	}
	for name, compact := range map[string]string{
		"not a JWS":            "x",
		"an entitlement token": g.mint(t, "custom/ok", "custom", []byte("{}")),
	} {
		_, err := verify.Receipt(context.Background(), keys, compact)
		var ve *verify.Error
		if !errors.As(err, &ve) || ve.Reason != verify.Malformed {
			t.Fatalf("%s: %v, want a Malformed refusal", name, err)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "verify: receipt refused") {
			t.Errorf("%s: %q, want it to say the receipt was refused", name, msg)
		}
	}
}

func jwksOf(t *testing.T, g *gateway) []byte {
	t.Helper()
	res, err := http.Get(g.jwks.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
