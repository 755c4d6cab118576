package keycache

import (
	"slices"

	"github.com/secureai-gateway/gateway/internal/apikey"
)

// clone deep-copies a key, so no request can change what the cache (or another request) holds.
// TestCloneCoversEveryReferenceField fails when apikey.Key gains a field this does not copy.
func clone(k *apikey.Key) *apikey.Key {
	c := *k
	c.AllowedModels = slices.Clone(k.AllowedModels)
	if d := k.FailoverDefaults; d != nil {
		dc := *d
		dc.Models, dc.On = slices.Clone(d.Models), slices.Clone(d.On)
		c.FailoverDefaults = &dc
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
