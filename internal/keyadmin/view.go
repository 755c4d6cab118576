package keyadmin

import "github.com/secureai-gateway/gateway/internal/apikey"

// View is a key as the admin API and the CLI show it: effective limits, billing mode and
// policies filled in.
func View(k *apikey.Key) *apikey.Key {
	v := k.Clone()
	fillDefaults(v)
	v.AllowedSMLTPPolicies = k.SMLTPPolicies()
	allowed := k.HedgingAllowed()
	v.AllowHedging = &allowed
	return v
}
