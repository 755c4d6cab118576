package receipt_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/secureai-gateway/gateway/internal/api/accountapi"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/policy"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/verify"
)

type memStore struct {
	mu  sync.Mutex
	m   map[string]receipt.Record
	err error
}

func (s *memStore) PutReceipt(_ context.Context, r receipt.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[r.BundleID]; ok {
		return receipt.ErrExists
	}
	s.m[r.BundleID] = r
	return nil
}

func (s *memStore) Receipt(_ context.Context, id string) (receipt.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return receipt.Record{}, s.err
	}
	r, ok := s.m[id]
	if !ok {
		return r, receipt.ErrNotFound
	}
	return r, nil
}

var sample = receipt.Claims{
	BundleID: "set_b", RequestID: "req_1", KeyID: "key_owner",
	Policy: receipt.Policy{Name: "internal", Hash: "ph", Mode: "monitor", Verdict: receipt.VerdictMonitored,
		Violations: []string{"selfhosted/llama: allowed_regions"}},
	Attempts: []receipt.Attempt{
		{JTI: "set_a", Model: "openai/gpt-5-nano", Outcome: "rate_limited", BodySHA256: strings.Repeat("a", 64)},
		{JTI: "set_b", Model: "google/gemini-2.5-flash", Outcome: "served", BodySHA256: strings.Repeat("b", 64)},
	},
	ServedModel: "google/gemini-2.5-flash",
}

func issuer(t *testing.T) (*receipt.Issuer, *signing.Signer, *memStore) {
	t.Helper()
	ks, err := signing.NewKeyset(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s, err := signing.NewSigner(ks, receipt.Type)
	if err != nil {
		t.Fatal(err)
	}
	st := &memStore{m: map[string]receipt.Record{}}
	return &receipt.Issuer{Signer: s}, s, st
}

// verifyFromContract is what a third party writes from SPEC 8 alone: fetch the JWKS, pick the key
// by the JWS's kid, check the EdDSA signature, read the claims.
func verifyFromContract(t *testing.T, jwksURL, compact string) map[string]any {
	t.Helper()
	resp, err := http.Get(jwksURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	obj, err := jose.ParseSignedCompact(compact, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		t.Fatal(err)
	}
	keys := set.Key(obj.Signatures[0].Header.KeyID)
	if len(keys) != 1 {
		t.Fatalf("kid %q is not in the JWKS", obj.Signatures[0].Header.KeyID)
	}
	payload, err := obj.Verify(keys[0])
	if err != nil {
		t.Fatalf("the receipt does not verify: %v", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

func TestReceiptVerifiesAgainstTheJWKS(t *testing.T) {
	iss, signer, _ := issuer(t)
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	iss.Now = func() time.Time { return now }
	rec, err := iss.Sign(sample)
	if err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(signer.JWKS()) }))
	defer jwks.Close()
	c := verifyFromContract(t, jwks.URL, rec.JWS)
	policy, _ := c["policy"].(map[string]any)
	attempts, _ := c["attempts"].([]any)
	if policy["name"] != "internal" || policy["policy_hash"] != "ph" || policy["mode"] != "monitor" || policy["verdict"] != receipt.VerdictMonitored {
		t.Errorf("policy = %v", policy)
	}
	if len(attempts) != 2 {
		t.Fatalf("attempts = %v", attempts)
	}
	for i, a := range attempts {
		a := a.(map[string]any)
		want := sample.Attempts[i]
		if a["jti"] != want.JTI || a["model"] != want.Model || a["outcome"] != want.Outcome || a["body_sha256"] != want.BodySHA256 {
			t.Errorf("attempt %d = %v", i, a)
		}
	}
	if c["served_model"] != sample.ServedModel || c["request_id"] != "req_1" || c["bundle_id"] != "set_b" || c["iat"] != float64(now.Unix()) {
		t.Errorf("claims = %v", c)
	}
	if !rec.ExpiresAt.Equal(now.Add(receipt.DefaultRetention)) {
		t.Errorf("retention ends %s", rec.ExpiresAt)
	}
}

func TestSignRefusesAReceiptWithoutIDs(t *testing.T) {
	iss, _, _ := issuer(t)
	for _, c := range []receipt.Claims{{KeyID: "k"}, {BundleID: "b"}, {BundleID: strings.Repeat("x", 129), KeyID: "k"}} {
		if _, err := iss.Sign(c); err == nil {
			t.Errorf("Sign(%+v) succeeded", c)
		}
	}
}

func TestHandler(t *testing.T) {
	iss, _, st := issuer(t)
	rec, err := iss.Sign(sample)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutReceipt(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	owner, other := &apikey.Key{ID: "key_owner"}, &apikey.Key{ID: "key_other"}
	tests := []struct {
		name     string
		caller   *apikey.Key
		id       string
		storeErr error
		kind     fault.Kind
		status   int
	}{
		{"the key that made the request gets its receipt", owner, "set_b", nil, 0, 200},
		{"another key gets 404", other, "set_b", nil, fault.NotFound, 0},
		{"an unknown id is 404", owner, "set_zzz", nil, fault.NotFound, 0},
		{"a missing id is 400", owner, "", nil, fault.InvalidRequest, 0},
		{"a 129-character id is 400", owner, strings.Repeat("x", 129), nil, fault.InvalidRequest, 0},
		{"a 128-character id is looked up", owner, strings.Repeat("x", 128), nil, fault.NotFound, 0},
		{"no caller is 401", nil, "set_b", nil, fault.Unauthenticated, 0},
		{"a store failure is unavailable", owner, "set_b", errors.New("down"), fault.Unavailable, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st.err = tt.storeErr
			var failed error
			mux := httpapi.Table(func(w http.ResponseWriter, r *http.Request, err error) { failed = err },
				accountapi.Receipts{Store: st}.Routes()...)
			req := httptest.NewRequest(http.MethodGet, "/receipts/"+tt.id, nil)
			if tt.caller != nil {
				req = req.WithContext(identity.WithKey(req.Context(), tt.caller))
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if tt.status != 0 {
				var body accountapi.ReceiptResponse
				_ = json.Unmarshal(rec.Body.Bytes(), &body)
				if failed != nil || rec.Code != tt.status || !body.Success || body.Receipt == "" || !strings.Contains(string(body.Claims), `"served_model"`) {
					t.Errorf("status %d, failed %v, body %s", rec.Code, failed, rec.Body)
				}
				return
			}
			if failed == nil || fault.KindOf(failed) != tt.kind {
				t.Errorf("failed with %v (kind %v), want kind %v", failed, fault.KindOf(failed), tt.kind)
			}
		})
	}
}

// TestPublicVerifierReadsReceipts: the verify package's Receipt (what the README shows) accepts a
// receipt and refuses a changed one.
func TestPublicVerifierReadsReceipts(t *testing.T) {
	iss, signer, _ := issuer(t)
	rec, err := iss.Sign(sample)
	if err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(signer.JWKS()) }))
	defer jwks.Close()
	keys := verify.NewRemoteJWKS(jwks.URL, nil)
	payload, err := verify.Receipt(context.Background(), keys, rec.JWS)
	if err != nil || !strings.Contains(string(payload), `"bundle_id":"set_b"`) {
		t.Fatalf("Receipt = %s, %v", payload, err)
	}
	parts := strings.Split(rec.JWS, ".")
	forged := parts[0] + "." + parts[1][:len(parts[1])-2] + "xx." + parts[2]
	var ve *verify.Error
	if _, err := verify.Receipt(context.Background(), keys, forged); !errors.As(err, &ve) || ve.Reason != verify.BadSignature {
		t.Errorf("a changed receipt: err %v, want bad_signature", err)
	}
}

func TestPolicySection(t *testing.T) {
	set, _ := policy.NewSet(nil)
	internal, _ := set.Lookup("internal")
	tests := []struct {
		name     string
		verdicts []policy.Verdict
		verdict  string
		violated []string
	}{
		{"no breach is allowed", []policy.Verdict{{Model: "a", Allowed: true}}, receipt.VerdictAllowed, nil},
		{"a monitor-mode breach is recorded", []policy.Verdict{{Model: "a", Allowed: true}, {Model: "b", Rule: policy.RuleRegion}},
			receipt.VerdictMonitored, []string{"b: " + policy.RuleRegion}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := receipt.PolicySection(internal, tt.verdicts)
			if p.Name != "internal" || p.Hash != internal.Hash || p.Mode != "monitor" || p.Verdict != tt.verdict || strings.Join(p.Violations, ",") != strings.Join(tt.violated, ",") {
				t.Errorf("got %+v", p)
			}
		})
	}
}

// A draft's claims kept apart (Payload) and drafted again (Redraft) sign into the receipt Sign
// makes; only the signer that drafted it claims it, and a signed record has no claims to give.
func TestADraftKeptAsItsClaimsSignsTheSame(t *testing.T) {
	iss, signer, _ := issuer(t)
	now := time.Now()
	iss.Now = func() time.Time { return now }
	claims := receipt.Claims{BundleID: "bnd_1", KeyID: "key_1", ServedModel: "p/m",
		Attempts: []receipt.Attempt{{JTI: "bnd_1", Model: "p/m", Outcome: "served"}}}
	draft, err := iss.Draft(claims)
	if err != nil {
		t.Fatal(err)
	}
	want, err := iss.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	_, other, _ := issuer(t)
	if !draft.DraftedBy(signer) || draft.DraftedBy(other) || want.DraftedBy(signer) {
		t.Errorf("DraftedBy: draft by its signer %v, by another %v, a signed record %v",
			draft.DraftedBy(signer), draft.DraftedBy(other), want.DraftedBy(signer))
	}
	payload, err := draft.Payload()
	if err != nil {
		t.Fatal(err)
	}
	var back receipt.Claims
	if err := json.Unmarshal(payload, &back); err != nil || back.BundleID != "bnd_1" || back.IssuedAt != now.Unix() || len(back.Attempts) != 1 {
		t.Fatalf("payload %s (%v)", payload, err)
	}
	stored := receipt.Record{BundleID: draft.BundleID, KeyID: draft.KeyID, CreatedAt: draft.CreatedAt, ExpiresAt: draft.ExpiresAt}
	got, err := stored.Redraft(signer, payload).Signed()
	if err != nil || got.JWS != want.JWS {
		t.Errorf("redrafted and signed: %q, %v; want %q", got.JWS, err, want.JWS)
	}
	if _, err := want.Payload(); err == nil {
		t.Error("a signed record gave claims")
	}
}
