package apikey

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHash(t *testing.T) {
	valid := "sk-" + strings.Repeat("0123456789abcdef", 4)
	sum := sha256.Sum256([]byte(valid))
	cases := []struct {
		name, secret string
		ok           bool
	}{
		{"valid", valid, true},
		{"uppercase hex is a different secret, refused", "sk-" + strings.Repeat("ABCDEF0123456789", 4), false},
		{"empty", "", false},
		{"prefix-only", "sk-", false},
		{"short", valid[:len(valid)-1], false},
		{"long", valid + "0", false},
		{"wrong-prefix", "pk-" + valid[3:], false},
		{"uppercase-prefix", "SK-" + valid[3:], false},
		{"non-hex", "sk-" + strings.Repeat("g", 64), false},
		{"space-inside", "sk-" + strings.Repeat("a", 31) + " " + strings.Repeat("a", 32), false},
		{"trailing-newline", valid[:len(valid)-1] + "\n", false},
		{"multibyte", "sk-" + strings.Repeat("é", 32), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := Hash(tc.secret)
			if tc.ok != (err == nil) {
				t.Fatalf("Hash(%q) error %v, want ok=%v", tc.secret, err, tc.ok)
			}
			if !tc.ok && !errors.Is(err, ErrMalformed) {
				t.Errorf("error %v, want ErrMalformed", err)
			}
			if tc.ok && len(h) != 64 {
				t.Errorf("hash %q is not 64 hex digits", h)
			}
		})
	}
	if h, _ := Hash(valid); h != hex.EncodeToString(sum[:]) {
		t.Errorf("Hash is not the hex SHA-256 of the secret")
	}
}

func TestNewSecretHashes(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	if a == b {
		t.Fatal("two secrets are equal")
	}
	for _, s := range []string{a, b} {
		if _, err := Hash(s); err != nil {
			t.Errorf("NewSecret %q does not pass Hash: %v", s, err)
		}
	}
	if p := Prefix(a); len(p) != 10 || !strings.HasPrefix(a, p) {
		t.Errorf("Prefix %q", p)
	}
}

// A session secret is the console's only: the API's Hash refuses it, and an API key is no
// session secret, so neither kind passes for the other, even with the same digits.
func TestSessionSecretsAndAPIKeysNeverPassForEachOther(t *testing.T) {
	session, key := NewSessionSecret(), NewSecret()
	if !strings.HasPrefix(session, "cs-") || session == NewSessionSecret() {
		t.Fatalf("NewSessionSecret %q: want cs- and a fresh secret each time", session)
	}
	if _, err := SessionHash(session); err != nil {
		t.Errorf("SessionHash(NewSessionSecret()): %v", err)
	}
	if _, err := Hash(session); !errors.Is(err, ErrMalformed) {
		t.Errorf("Hash(a session secret) = %v, want ErrMalformed", err)
	}
	for _, k := range []string{key, "sk-" + session[3:]} {
		if _, err := SessionHash(k); err == nil {
			t.Errorf("SessionHash accepts the API key %q", k)
		}
	}
	for _, bad := range []string{"", "cs-", session[:len(session)-1], session + "0", "CS-" + session[3:], "cs-" + strings.Repeat("G", 64)} {
		if _, err := SessionHash(bad); err == nil {
			t.Errorf("SessionHash(%q) accepted", bad)
		}
	}
}

func TestUsableAndAllows(t *testing.T) {
	now := time.Now()
	past, future := now.Add(-time.Second), now.Add(time.Hour)
	for _, tc := range []struct {
		name string
		k    Key
		ok   bool
	}{
		{"plain", Key{}, true},
		{"revoked", Key{RevokedAt: &past}, false},
		{"expired", Key{ExpiresAt: &past}, false},
		{"expires-now", Key{ExpiresAt: &now}, false},
		{"not-yet-expired", Key{ExpiresAt: &future}, true},
	} {
		if got := tc.k.Usable(now); got != tc.ok {
			t.Errorf("%s: Usable = %v", tc.name, got)
		}
	}
	k := Key{AllowedModels: []string{"a/b"}}
	if !k.Allows("a/b") || k.Allows("a/c") || !(&Key{}).Allows("anything") {
		t.Error("Allows is wrong")
	}
}

// TestCloneCoversEveryReferenceField fails when Key gains a slice, map or pointer field: Clone
// must then deep-copy it too (and the list below be extended).
func TestCloneCoversEveryReferenceField(t *testing.T) {
	copied := map[string]bool{"AllowedModels": true, "AllowedSMLTPPolicies": true, "FailoverDefaults": true, "AllowHedging": true, "ExpiresAt": true, "RevokedAt": true}
	for f := range reflect.TypeFor[Key]().Fields() {
		switch f.Type.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
			if !copied[f.Name] {
				t.Errorf("apikey.Key.%s is a reference Clone does not copy", f.Name)
			}
		}
	}
}

func TestLimitsDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    Key
		want Limits
	}{
		{"unset limits are the SPEC 7 defaults", Key{}, Limits{60, 1000, 100, 10000}},
		{"set limits win", Key{DailyLimit: 5, MonthlyLimit: 50, RateLimit: RateLimit{RequestsPerMinute: 2, RequestsPerHour: 20}}, Limits{2, 20, 5, 50}},
	} {
		if got := tc.k.Limits(); got != tc.want {
			t.Errorf("%s: Limits() = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if m := (&Key{}).BillingModeOrDefault(); m != UserCompletions {
		t.Errorf("unset billing mode = %q, want user-completions", m)
	}
	if p := (&Key{}).SMLTPPolicies(); !slices.Equal(p, []string{"public", "internal"}) {
		t.Errorf("unset policies = %v, want [public internal]", p)
	}
}
