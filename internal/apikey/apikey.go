// Package apikey holds the API key domain: the key record, its secret's format and hashing, and the
// questions the gateway asks of a key (is it usable, may it call this model).
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
)

// Key is one API key. Only the SHA-256 of its secret is ever stored.
//
// The limit fields hold what an admin set (see Limit): zero means "the default" (DefaultLimits), so
// keys stored before a field existed keep working, and NoLimit means none. Read them through
// Limits, BillingModeOrDefault and SMLTPPolicies, never directly.
type Key struct {
	ID     string `json:"id"`
	Hash   string `json:"-"`
	Prefix string `json:"prefix"` // the first characters of the secret, to recognise it
	Name   string `json:"name"`
	UserID string `json:"userId,omitempty"`
	Admin  bool   `json:"admin"`
	// SessionOf is set on a console session only: the id of the admin key that opened it. A
	// session's secret is a session secret (SessionHash), which the API never accepts, and the
	// session acts only while that key may (keyadmin.Service.Operator).
	SessionOf     string      `json:"sessionOf,omitempty"`
	BillingMode   BillingMode `json:"billingMode,omitempty"`
	DailyLimit    Limit       `json:"dailyLimit,omitempty"`
	MonthlyLimit  Limit       `json:"monthlyLimit,omitempty"`
	RateLimit     RateLimit   `json:"rateLimit"`
	AllowedModels []string    `json:"allowedModels,omitempty"` // empty: every model
	// AllowedSMLTPPolicies names the policies the key may use; empty: DefaultSMLTPPolicies.
	AllowedSMLTPPolicies []string        `json:"allowedSMLTPPolicies,omitempty"`
	FailoverDefaults     *chain.Defaults `json:"failoverDefaults,omitempty"`
	// AllowHedging false forbids hedge_after_ms for the key's requests (hedging multiplies
	// provider calls, and in points mode the caller pays for one); nil: allowed. Read it through
	// HedgingAllowed.
	AllowHedging *bool      `json:"allowHedging,omitempty"`
	CreatedAt    time.Time  `json:"createdAt"`
	ExpiresAt    *time.Time `json:"expiresAt,omitempty"`
	RevokedAt    *time.Time `json:"revokedAt,omitempty"`
}

// RateLimit is a key's short-window request limits; zero fields mean the default.
type RateLimit struct {
	RequestsPerMinute Limit `json:"requestsPerMinute,omitempty"`
	RequestsPerHour   Limit `json:"requestsPerHour,omitempty"`
}

// Limit is one request limit of a key: a count, 0 for unset (the default applies) or NoLimit.
// In JSON NoLimit is null (SPEC 7: "any limit may be null"); elsewhere (DynamoDB's number
// attributes) it is stored as -1, so an unset field and a lifted limit never read alike.
type Limit int

// NoLimit is a limit lifted by an admin (null in the API): the window is still counted, so usage
// shows it, but never refuses a request. It is meant for service and admin keys.
const NoLimit Limit = -1

// MarshalJSON writes NoLimit as null and any other limit as its number.
func (l Limit) MarshalJSON() ([]byte, error) {
	if l == NoLimit {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, int64(l), 10), nil
}

// UnmarshalJSON reads null as NoLimit and a number as the limit.
func (l *Limit) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*l = NoLimit
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*l = Limit(n)
	return nil
}

// Refuses reports whether a window with this limit refuses a request when it has counted n.
func (l Limit) Refuses(n int) bool { return l != NoLimit && n >= int(l) }

// BillingMode says what a key's calls are paid with.
type BillingMode string

const (
	// UserCompletions deducts catalog points per served completion from the user's monthly bucket.
	UserCompletions BillingMode = "user-completions"
	// UsageByModel deducts the served model's price × tokens from the user's dollar budget.
	UsageByModel BillingMode = "usage-by-model"
)

// Valid reports whether m is one of the two modes.
func (m BillingMode) Valid() bool { return m == UserCompletions || m == UsageByModel }

// Limits are a key's effective request limits, defaults filled in: each a count or NoLimit.
type Limits struct {
	PerMinute, PerHour, PerDay, PerMonth Limit
}

// DefaultLimits apply to every limit an admin left unset (SPEC 7).
var DefaultLimits = Limits{PerMinute: 60, PerHour: 1000, PerDay: 100, PerMonth: 10000}

// MaxPerMinute and MaxPerHour cap what an admin may set (SPEC 7); day and month are uncapped.
const (
	MaxPerMinute = 1000
	MaxPerHour   = 10000
)

// DefaultSMLTPPolicies are the policies a key may use when none are listed.
func DefaultSMLTPPolicies() []string { return []string{"public", "internal"} }

// Limits returns the key's effective limits.
func (k *Key) Limits() Limits {
	or := func(v, def Limit) Limit {
		if v == 0 {
			return def
		}
		return v
	}
	return Limits{
		PerMinute: or(k.RateLimit.RequestsPerMinute, DefaultLimits.PerMinute),
		PerHour:   or(k.RateLimit.RequestsPerHour, DefaultLimits.PerHour),
		PerDay:    or(k.DailyLimit, DefaultLimits.PerDay),
		PerMonth:  or(k.MonthlyLimit, DefaultLimits.PerMonth),
	}
}

// BillingModeOrDefault is the key's billing mode, user-completions when unset.
func (k *Key) BillingModeOrDefault() BillingMode {
	if k.BillingMode == "" {
		return UserCompletions
	}
	return k.BillingMode
}

// SMLTPPolicies is the key's allowed policies, defaults filled in.
func (k *Key) SMLTPPolicies() []string {
	if len(k.AllowedSMLTPPolicies) == 0 {
		return DefaultSMLTPPolicies()
	}
	return slices.Clone(k.AllowedSMLTPPolicies)
}

// Usable reports whether the key may authenticate at now: not revoked, not expired.
func (k *Key) Usable(now time.Time) bool {
	return k.RevokedAt == nil && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt))
}

// HedgingAllowed reports whether the key's requests may hedge (hedge_after_ms): unless an admin
// forbade it.
func (k *Key) HedgingAllowed() bool { return k.AllowHedging == nil || *k.AllowHedging }

// IsSession reports whether the record is a console session rather than an API key.
func (k *Key) IsSession() bool { return k.SessionOf != "" }

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

// The two kinds of secret differ in their prefix, so neither ever passes for the other: an API key
// ("sk-") is the bearer credential of the API, a session secret ("cs-") the console's cookie,
// which the API's authentication refuses as malformed before looking anything up. Both are
// stored only as their SHA-256, under which the store finds the record.
const (
	keyPrefix     = "sk-"
	sessionPrefix = "cs-"
)

// ErrMalformed reports a secret that is not "sk-" followed by 64 hex digits.
var ErrMalformed = errors.New("apikey: malformed key (expected sk- followed by 64 lowercase hex digits)")

// errMalformedSession reports a session secret that is not "cs-" followed by 64 hex digits.
var errMalformedSession = errors.New("apikey: malformed session secret (expected cs- followed by 64 lowercase hex digits)")

// NewSecret returns a fresh API key secret "sk-<64 hex>".
func NewSecret() string { return newSecret(keyPrefix) }

// NewSessionSecret returns a fresh console session secret "cs-<64 hex>".
func NewSessionSecret() string { return newSecret(sessionPrefix) }

func newSecret(prefix string) string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return prefix + hex.EncodeToString(b[:])
}

// NewID returns a random key id.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "key_" + hex.EncodeToString(b[:])
}

// Hash checks an API key's format and returns the hex SHA-256 that identifies it in a store.
func Hash(secret string) (string, error) {
	if !wellFormed(keyPrefix, secret) {
		return "", ErrMalformed
	}
	return sum(secret), nil
}

// SessionHash checks a session secret's format and returns the hex SHA-256 that identifies the
// session in a store.
func SessionHash(secret string) (string, error) {
	if !wellFormed(sessionPrefix, secret) {
		return "", errMalformedSession
	}
	return sum(secret), nil
}

func wellFormed(prefix, secret string) bool {
	if len(secret) != len(prefix)+secretHexLen || secret[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(secret); i++ {
		c := secret[i]
		// Lowercase only: the hash identifies the exact secret, and an uppercase spelling of a key
		// would be a different secret that merely looks the same.
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func sum(secret string) string {
	s := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(s[:])
}

// Prefix is the part of a secret shown in listings.
func Prefix(secret string) string { return secret[:min(len(secret), 10)] }

// ErrNotFound is returned by stores for an unknown key.
var ErrNotFound = errors.New("apikey: not found")

// ErrExists is returned by stores asked to create a key whose secret is already stored.
var ErrExists = errors.New("apikey: a key with this secret already exists")

// Clone deep-copies the key, so a cache or an audit record can hold it while callers change
// theirs. TestCloneCoversEveryReferenceField fails when Key gains a field this does not copy.
func (k *Key) Clone() *Key {
	c := *k
	c.AllowedModels = slices.Clone(k.AllowedModels)
	c.AllowedSMLTPPolicies = slices.Clone(k.AllowedSMLTPPolicies)
	if d := k.FailoverDefaults; d != nil {
		dc := *d
		dc.Models, dc.On = slices.Clone(d.Models), slices.Clone(d.On)
		c.FailoverDefaults = &dc
	}
	if k.AllowHedging != nil {
		b := *k.AllowHedging
		c.AllowHedging = &b
	}
	if k.ExpiresAt != nil {
		t := *k.ExpiresAt
		c.ExpiresAt = &t
	}
	if k.RevokedAt != nil {
		t := *k.RevokedAt
		c.RevokedAt = &t
	}
	return &c
}
