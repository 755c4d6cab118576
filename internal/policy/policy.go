// Package policy resolves the SMLTP policy a request runs under. The policy engine itself (allowed
// providers and regions, enforce/monitor) is a later issue; this package already gives every
// surface the same answer for which policy applied, where that choice came from, and its hash, so
// responses and the policy-check dry run agree and the hash stays stable once rules are added.
package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Default is the policy a request gets when it names none.
const Default = "public"

// Names are the policies the gateway knows.
var Names = []string{"public", "internal", "confidential"}

// Source says where the applied policy came from.
const (
	SourceRequest = "request"
	SourceDefault = "default"
)

// Applied is the policy a request runs under.
type Applied struct {
	Name      string `json:"name"`
	Canonical string `json:"canonical"` // the canonical JSON the hash covers
	Source    string `json:"source"`
	Hash      string `json:"policy_hash"` // hex SHA-256 of Canonical
}

// UnknownError is a request naming a policy that does not exist.
type UnknownError struct{ Name string }

func (e *UnknownError) Error() string {
	return fmt.Sprintf("smltp_policy: unknown policy %q (allowed: %s)", e.Name, strings.Join(Names, ", "))
}

// Resolve returns the policy named by a request; "" means the request named none.
func Resolve(name string) (Applied, error) {
	src := SourceRequest
	if name == "" {
		name, src = Default, SourceDefault
	}
	a, ok := known[name]
	if !ok {
		return Applied{}, &UnknownError{Name: name}
	}
	a.Source = src
	return a, nil
}

// known holds each policy's canonical form and hash, computed once rather than per request.
var known = func() map[string]Applied {
	m := make(map[string]Applied, len(Names))
	for _, name := range Names {
		canonical := canonicalJSON(name)
		sum := sha256.Sum256([]byte(canonical))
		m[name] = Applied{Name: name, Canonical: canonical, Hash: hex.EncodeToString(sum[:])}
	}
	return m
}()

// canonicalJSON is the policy's canonical form. Today a policy is only its name; when rules land
// they join this object with sorted keys, and the hash changes exactly when the rules do.
func canonicalJSON(name string) string {
	b, _ := json.Marshal(struct {
		Name string `json:"name"`
	}{name})
	return string(b)
}
