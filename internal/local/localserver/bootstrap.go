package localserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
)

// KeyCreator is a store that can hold new keys and the users they bill.
type KeyCreator interface {
	CountKeys(ctx context.Context) (int, error)
	CreateKey(ctx context.Context, k *apikey.Key) error
	KeyByHash(ctx context.Context, hash string) (*apikey.Key, error)
	CreateUser(ctx context.Context, u *billing.User) error
}

// Bootstrap makes sure an admin key exists. With secret set it ensures that key exists; otherwise,
// on a store with no keys, it creates one. It returns the new secret to show once ("" when none
// was created). A key it creates bills its user, created with it when new, with no quota.
func Bootstrap(ctx context.Context, store KeyCreator, secret string) (string, error) {
	if secret != "" {
		hash, err := apikey.Hash(secret)
		if err != nil {
			return "", fmt.Errorf("SECUREAI_BOOTSTRAP_KEY: %w", err)
		}
		if _, err := store.KeyByHash(ctx, hash); err == nil {
			return "", nil
		}
		return "", create(ctx, store, newAdmin(secret, hash))
	}
	n, err := store.CountKeys(ctx)
	if err != nil || n > 0 {
		return "", err
	}
	secret = apikey.NewSecret()
	hash, _ := apikey.Hash(secret)
	return secret, create(ctx, store, newAdmin(secret, hash))
}

// create stores the bootstrap key k, and first its user with no quota (billing.NoQuota), as the
// key has no request limits: a newcomer trying the gateway with it is not refused with a 402 after
// the default 1 000 points. A user that exists already (an admin may have given it a quota) is
// left as it is.
func create(ctx context.Context, store KeyCreator, k *apikey.Key) error {
	u := billing.NewUser(billing.UserID(k), billing.Defaults{MonthlyPoints: billing.NoQuota}, k.CreatedAt)
	if err := store.CreateUser(ctx, u); err != nil && !errors.Is(err, billing.ErrExists) {
		return fmt.Errorf("creating the bootstrap admin's user: %w", err)
	}
	return store.CreateKey(ctx, k)
}

// newAdmin is the bootstrap admin key: no request limits (SPEC 7), so a newcomer trying the
// gateway with it is not refused for the rest of the day after the default 100 calls; its user
// "admin" has no quota (create).
func newAdmin(secret, hash string) *apikey.Key {
	return &apikey.Key{ID: apikey.NewID(), Hash: hash, Prefix: apikey.Prefix(secret), Name: "bootstrap admin",
		UserID: "admin", Admin: true, CreatedAt: time.Now().UTC(),
		RateLimit:  apikey.RateLimit{RequestsPerMinute: apikey.NoLimit, RequestsPerHour: apikey.NoLimit},
		DailyLimit: apikey.NoLimit, MonthlyLimit: apikey.NoLimit}
}
