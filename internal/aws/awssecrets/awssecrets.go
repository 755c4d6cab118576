// Package awssecrets reads provider credentials from AWS Secrets Manager: one secret holding a
// JSON object keyed by the catalog's api_key_env names. Values never leave this package except to
// the provider adapters; they are not logged or returned in errors.
package awssecrets

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// GetSecretValueAPI is the one call this package makes.
type GetSecretValueAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Credentials fetches the secret once and returns a lookup by name. Names the secret lacks fall
// back to fallback (the environment), so a deployment can mix both.
func Credentials(ctx context.Context, api GetSecretValueAPI, secretID string, fallback func(string) string) (func(string) string, error) {
	out, err := api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretID)})
	if err != nil {
		return nil, fmt.Errorf("awssecrets: reading provider credentials secret %s: %w", secretID, err)
	}
	values := map[string]string{}
	if s := aws.ToString(out.SecretString); s != "" {
		if err := json.Unmarshal([]byte(s), &values); err != nil {
			// The error would quote the secret's text; say only what is wrong.
			return nil, fmt.Errorf("awssecrets: secret %s is not a JSON object of string values", secretID)
		}
	}
	return func(name string) string {
		if v, ok := values[name]; ok && v != "" {
			return v
		}
		return fallback(name)
	}, nil
}
