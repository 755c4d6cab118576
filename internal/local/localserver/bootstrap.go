package localserver

import (
	"context"
	"fmt"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
)

// KeyCreator is a store that can hold new keys.
type KeyCreator interface {
	CountKeys(ctx context.Context) (int, error)
	CreateKey(ctx context.Context, k *apikey.Key) error
	KeyByHash(ctx context.Context, hash string) (*apikey.Key, error)
}

// Bootstrap makes sure an admin key exists. With secret set it ensures that key exists; otherwise,
// on a store with no keys, it creates one. It returns the new secret to show once ("" when none
// was created).
func Bootstrap(ctx context.Context, store KeyCreator, secret string) (string, error) {
	if secret != "" {
		hash, err := apikey.Hash(secret)
		if err != nil {
			return "", fmt.Errorf("SECUREAI_BOOTSTRAP_KEY: %w", err)
		}
		if _, err := store.KeyByHash(ctx, hash); err == nil {
			return "", nil
		}
		return "", store.CreateKey(ctx, newAdmin(secret, hash))
	}
	n, err := store.CountKeys(ctx)
	if err != nil || n > 0 {
		return "", err
	}
	secret = apikey.NewSecret()
	hash, _ := apikey.Hash(secret)
	return secret, store.CreateKey(ctx, newAdmin(secret, hash))
}

// newAdmin is the bootstrap admin key: no request limits (SPEC 7), so a newcomer trying the
// gateway with it is not refused for the rest of the day after the default 100 calls.
func newAdmin(secret, hash string) *apikey.Key {
	return &apikey.Key{ID: apikey.NewID(), Hash: hash, Prefix: apikey.Prefix(secret), Name: "bootstrap admin",
		UserID: "admin", Admin: true, CreatedAt: time.Now().UTC(),
		RateLimit:  apikey.RateLimit{RequestsPerMinute: apikey.NoLimit, RequestsPerHour: apikey.NoLimit},
		DailyLimit: apikey.NoLimit, MonthlyLimit: apikey.NoLimit}
}
