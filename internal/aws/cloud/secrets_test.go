package cloud

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/secureai-gateway/gateway/internal/aws/awssecrets"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/signing"
)

// barrierSecrets answers GetSecretValue only once two calls are in flight at the same time: a
// build that read its secrets one after the other would wait on the first until its deadline.
type barrierSecrets struct {
	awssecrets.SigningKeysAPI
	values map[string]string

	mu      sync.Mutex
	arrived int
	both    chan struct{}
}

func (b *barrierSecrets) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	b.mu.Lock()
	if b.arrived++; b.arrived == 2 {
		close(b.both)
	}
	b.mu.Unlock()
	select {
	case <-b.both:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(b.values[aws.ToString(in.SecretId)])}, nil
}

// The provider credentials and the signing keyset are two round trips of a cold function's first
// request: they are in flight at once.
func TestTheTwoSecretsAreReadAtOnce(t *testing.T) {
	ks, err := signing.NewKeyset(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ks)
	secrets := &barrierSecrets{both: make(chan struct{}),
		values: map[string]string{"provider": `{"OPENAI_API_KEY":"sk-from-the-secret"}`, "signing": string(raw)}}
	c := &Cloud{Config: Config{ProviderSecretARN: "provider", SigningSecretARN: "signing"}, secrets: secrets, Events: event.Discard{},
		catalog: func() (*catalog.Catalog, error) { cat, _, err := gateway.Catalog("", true); return cat, err }}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := c.GatewayDeps(ctx)
	if err != nil {
		t.Fatalf("GatewayDeps: %v (the second secret was not read while the first was in flight)", err)
	}
	if d.Signer == nil || d.Credential("OPENAI_API_KEY") != "sk-from-the-secret" {
		t.Errorf("signer %v, credential %q: want both secrets' contents", d.Signer, d.Credential("OPENAI_API_KEY"))
	}
}
