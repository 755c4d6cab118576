package verify_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/entitlement"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/verify"
)

// A model server that the gateway's catalog names "llama-box" accepts only calls the gateway
// entitled, each once. The gateway side (first block) only stands in for a real gateway.
func Example() {
	// --- stand-in for the gateway: its JWKS and one minted token ---
	ks, _ := signing.NewKeyset(time.Now())
	signer, _ := signing.NewSigner(ks, entitlement.Type)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(signer.JWKS()) }))
	defer gw.Close()
	body := `{"model":"llama-3-8b","messages":[{"role":"user","content":"hi"}]}`
	tok, _ := (&entitlement.Minter{Signer: signer}).Mint(entitlement.Attempt{
		KeyID: "key_1", Model: "llama-box/llama-3-8b", Provider: "llama-box", Body: []byte(body)})

	// --- the model server ---
	v := &verify.Verifier{
		Keys:     verify.NewRemoteJWKS(gw.URL+"/.well-known/jwks.json", nil),
		Audience: "llama-box",
		Replay:   verify.NewMemoryReplayCache(0),
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claims, raw, err := v.VerifyRequest(r, "llama-box/llama-3-8b")
		var refused *verify.Error
		if errors.As(err, &refused) {
			http.Error(w, "refused: "+string(refused.Reason), http.StatusUnauthorized)
			return
		}
		if err != nil { // the JWKS or the replay cache failed: not the caller's fault
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		var req struct{ Model string }
		_ = json.Unmarshal(raw, &req)
		fmt.Fprintf(w, "serving %s for key %s", req.Model, claims.Subject)
	})

	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		req.Header.Set(verify.Header, tok.Compact)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	// Output:
	// 200 serving llama-3-8b for key key_1
	// 401 refused: replayed
}
