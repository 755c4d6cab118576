// Package apikey holds the API key domain: the key record, its secret's format and hashing, and the
// questions the gateway asks of a key (is it usable, may it call this model).
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
)

// Key is one API key. Only the SHA-256 of its secret is ever stored.
type Key struct {
	ID               string          `json:"id"`
	Hash             string          `json:"-"`
	Prefix           string          `json:"prefix"` // the first characters of the secret, to recognise it
	Name             string          `json:"name"`
	UserID           string          `json:"userId,omitempty"`
	Admin            bool            `json:"admin"`
	AllowedModels    []string        `json:"allowedModels,omitempty"` // empty: every model
	FailoverDefaults *chain.Defaults `json:"failoverDefaults,omitempty"`
	CreatedAt        time.Time       `json:"createdAt"`
	ExpiresAt        *time.Time      `json:"expiresAt,omitempty"`
	RevokedAt        *time.Time      `json:"revokedAt,omitempty"`
}

// Usable reports whether the key may authenticate at now: not revoked, not expired.
func (k *Key) Usable(now time.Time) bool {
	return k.RevokedAt == nil && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt))
}

// Allows reports whether the key may call model.
func (k *Key) Allows(model string) bool {
	return len(k.AllowedModels) == 0 || slices.Contains(k.AllowedModels, model)
}

// MayActFor reports whether the key may bill a call to userID (on-behalf-of): its own user
// always, anyone only with an admin key.
func (k *Key) MayActFor(userID string) bool {
	return userID == "" || userID == k.UserID || k.Admin
}

const secretHexLen = 64

// ErrMalformed reports a secret that is not "sk-" followed by 64 hex digits.
var ErrMalformed = errors.New("apikey: malformed key (expected sk- followed by 64 lowercase hex digits)")

// NewSecret returns a fresh secret "sk-<64 hex>".
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "sk-" + hex.EncodeToString(b[:])
}

// NewID returns a random key id.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "key_" + hex.EncodeToString(b[:])
}

// Hash checks a secret's format and returns the hex SHA-256 that identifies it in a store.
func Hash(secret string) (string, error) {
	if len(secret) != 3+secretHexLen || secret[:3] != "sk-" {
		return "", ErrMalformed
	}
	for i := 3; i < len(secret); i++ {
		c := secret[i]
		// Lowercase only: the hash identifies the exact secret, and an uppercase spelling of a key
		// would be a different secret that merely looks the same.
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", ErrMalformed
		}
	}
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:]), nil
}

// Prefix is the part of a secret shown in listings.
func Prefix(secret string) string { return secret[:min(len(secret), 10)] }

// ErrNotFound is returned by stores for an unknown key.
var ErrNotFound = errors.New("apikey: not found")

// ErrExists is returned by stores asked to create a key whose secret is already stored.
var ErrExists = errors.New("apikey: a key with this secret already exists")
