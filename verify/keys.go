package verify

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Keys finds the gateway's public key with a kid.
type Keys interface {
	// Key returns the key, or an *Error with reason UnknownKey.
	Key(ctx context.Context, kid string) (ed25519.PublicKey, error)
}

// StaticJWKS returns Keys from a JWKS document, for servers that pin the gateway's keys.
func StaticJWKS(raw []byte) (Keys, error) {
	set, err := parseJWKS(raw)
	if err != nil {
		return nil, err
	}
	return staticKeys(set), nil
}

type staticKeys map[string]ed25519.PublicKey

func (s staticKeys) Key(_ context.Context, kid string) (ed25519.PublicKey, error) {
	if k, ok := s[kid]; ok {
		return k, nil
	}
	return nil, refuse(UnknownKey, "kid %q is not in the JWKS", kid)
}

func parseJWKS(raw []byte) (staticKeys, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("verify: JWKS: %w", err)
	}
	out := staticKeys{}
	for _, k := range set.Keys {
		if pub, ok := k.Key.(ed25519.PublicKey); ok && k.KeyID != "" {
			out[k.KeyID] = pub
		}
	}
	return out, nil
}

// RemoteJWKS fetches the gateway's JWKS and caches it for TTL. An unknown kid refetches at most
// once per MinRefresh, so a key published by a rotation is found promptly while a flood of forged
// kids cannot hammer the gateway. Build it with NewRemoteJWKS.
type RemoteJWKS struct {
	URL        string
	Client     *http.Client
	TTL        time.Duration
	MinRefresh time.Duration
	Now        func() time.Time

	mu      sync.Mutex
	keys    staticKeys
	fetched time.Time
}

// NewRemoteJWKS returns keys fetched from url (the gateway's /.well-known/jwks.json) with client
// (nil: a client with a 10 s timeout), cached five minutes.
func NewRemoteJWKS(url string, client *http.Client) *RemoteJWKS {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return &RemoteJWKS{URL: url, Client: client, TTL: 5 * time.Minute, MinRefresh: 30 * time.Second, Now: time.Now}
}

// Key implements Keys.
func (r *RemoteJWKS) Key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	age := r.Now().Sub(r.fetched)
	stale := r.keys == nil || age >= r.TTL
	if _, ok := r.keys[kid]; !ok && age >= r.MinRefresh {
		stale = true
	}
	if stale {
		if err := r.fetch(ctx); err != nil && r.keys == nil {
			return nil, err
		}
	}
	return r.keys.Key(ctx, kid)
}

func (r *RemoteJWKS) fetch(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return fmt.Errorf("verify: JWKS URL: %w", err)
	}
	resp, err := r.Client.Do(req)
	if err != nil {
		return fmt.Errorf("verify: fetching the JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("verify: fetching the JWKS: status %d", resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("verify: reading the JWKS: %w", err)
	}
	keys, err := parseJWKS(raw)
	if err != nil {
		return err
	}
	r.keys, r.fetched = keys, r.Now()
	return nil
}
