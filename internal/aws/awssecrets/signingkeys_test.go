package awssecrets_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/secureai-gateway/gateway/internal/aws/awssecrets"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

func TestSigningKeysContract(t *testing.T) {
	client := secretsmanager.NewFromConfig(testenv.AWSConfig(t, testenv.Moto(t)))
	storetest.RunSigningKeys(t, func(t *testing.T) signing.Store {
		return awssecrets.SigningKeys{API: client, SecretID: uniqueSecret(t)}
	})
}

// TestSigningKeysEmptySecret is the template's placeholder: a secret created as "{}".
func TestSigningKeysEmptySecret(t *testing.T) {
	ctx := context.Background()
	client := secretsmanager.NewFromConfig(testenv.AWSConfig(t, testenv.Moto(t)))
	id := uniqueSecret(t)
	if _, err := client.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(id), SecretString: aws.String("{}")}); err != nil {
		t.Fatal(err)
	}
	s := awssecrets.SigningKeys{API: client, SecretID: id}
	if _, err := s.Keyset(ctx); !errors.Is(err, signing.ErrNoKeyset) {
		t.Fatalf("Keyset() err = %v, want ErrNoKeyset", err)
	}
	if _, err := signing.Rotate(ctx, s, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Keyset(ctx); err != nil {
		t.Errorf("after rotation: %v", err)
	}
}

func uniqueSecret(t *testing.T) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "signing-test-" + hex.EncodeToString(b[:])
}
