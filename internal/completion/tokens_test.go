package completion_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/entitlement"
	"github.com/secureai-gateway/gateway/internal/identity"
	pt "github.com/secureai-gateway/gateway/internal/provider/providertest"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/verify"
)

// Every attempt of a chain across OpenAI, Anthropic and Gemini — each through its real adapter
// and a fake speaking its wire format — carries a token whose body_sha256 is that of the exact
// bytes that provider received, plain and streaming. (Bedrock's send hook is proven byte for byte
// in providertest.CheckSendHook.)
func TestEveryProviderReceivesATokenForItsExactBytes(t *testing.T) {
	ks, err := signing.NewKeyset(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.NewSigner(ks, entitlement.Type, receipt.Type)
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(ks.JWKS())
	keys, err := verify.StaticJWKS(jwks)
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		svc, f := newService(t, pt.Unavailable, pt.RateLimited)
		svc.Controls.Tokens = &entitlement.Minter{Signer: signer}
		ctx := identity.WithKey(pt.WithTimeout(t, 20*time.Second), &apikey.Key{ID: "key_t"})
		call, err := svc.Open(ctx, input(t, chainBody, stream))
		if err != nil {
			t.Fatal(err)
		}
		if stream {
			st, _, err := call.Stream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for {
				if _, err := st.Next(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
			}
			st.Close()
		} else if _, _, err := call.Complete(ctx); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			fake            *pt.Server
			model, audience string
		}{{f.openai, gptModel, "openai"}, {f.anthropic, claudeModel, "anthropic"}, {f.gemini, geminiModel, "google"}} {
			body, header, _ := c.fake.Received()
			v := &verify.Verifier{Keys: keys, Audience: c.audience, Replay: verify.NewMemoryReplayCache(10)}
			claims, err := v.Verify(context.Background(), header.Get(verify.Header), c.model, body)
			if err != nil {
				t.Errorf("stream=%v %s: the token does not verify against the bytes received: %v", stream, c.audience, err)
				continue
			}
			if claims.Subject != "key_t" {
				t.Errorf("stream=%v %s: claims %+v", stream, c.audience, claims)
			}
		}
		if call.BundleID() == "" {
			t.Errorf("stream=%v: no bundle id", stream)
		}
	}
}
