package awssecrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/secureai-gateway/gateway/internal/signing"
)

// SigningKeysAPI is the Secrets Manager calls the signing keyset needs.
type SigningKeysAPI interface {
	GetSecretValueAPI
	PutSecretValue(ctx context.Context, in *secretsmanager.PutSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error)
	CreateSecret(ctx context.Context, in *secretsmanager.CreateSecretInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.CreateSecretOutput, error)
}

// SigningKeys is the cloud's signing.Store: one secret holding the keyset's JSON. A Lambda reads it
// once per cold start and signs locally; only `admin rotate-signing-key` writes it. The template
// may create the secret empty (or "{}"): that reads as no keyset yet.
type SigningKeys struct {
	API      SigningKeysAPI
	SecretID string // name or ARN
}

// Keyset implements signing.Store.
func (s SigningKeys) Keyset(ctx context.Context) (signing.Keyset, error) {
	var ks signing.Keyset
	out, err := s.API.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s.SecretID)})
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return ks, signing.ErrNoKeyset
	}
	if err != nil {
		return ks, fmt.Errorf("awssecrets: reading signing keyset secret %s: %w", s.SecretID, err)
	}
	if v := strings.TrimSpace(aws.ToString(out.SecretString)); v == "" || v == "{}" {
		return ks, signing.ErrNoKeyset
	}
	if err := json.Unmarshal([]byte(aws.ToString(out.SecretString)), &ks); err != nil {
		return ks, fmt.Errorf("awssecrets: secret %s: %w", s.SecretID, err)
	}
	return ks, nil
}

// UpdateKeyset implements signing.Store. Secrets Manager has no conditional write, so two
// rotations racing could lose one; rotation is a rare operator action, run from one place.
func (s SigningKeys) UpdateKeyset(ctx context.Context, update func(signing.Keyset, bool) (signing.Keyset, error)) (signing.Keyset, error) {
	cur, err := s.Keyset(ctx)
	exists := err == nil
	if err != nil && !errors.Is(err, signing.ErrNoKeyset) {
		return signing.Keyset{}, err
	}
	next, err := update(cur, exists)
	if err != nil {
		return signing.Keyset{}, err
	}
	raw, err := json.Marshal(next)
	if err != nil {
		return signing.Keyset{}, err
	}
	_, err = s.API.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(s.SecretID), SecretString: aws.String(string(raw))})
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		_, err = s.API.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(s.SecretID), SecretString: aws.String(string(raw)),
			Description: aws.String("SecureAI Gateway Ed25519 signing keyset (entitlement tokens, receipts)")})
	}
	if err != nil {
		return signing.Keyset{}, fmt.Errorf("awssecrets: writing signing keyset secret %s: %w", s.SecretID, err)
	}
	return next, nil
}
