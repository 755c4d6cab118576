package catalog

import "testing"

// Bedrock without a visible AWS credential source is unavailable (503 model_unavailable, not
// listed) like any provider without its key, decided without probing the metadata service.
func TestBedrockNeedsAVisibleCredentialSource(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cat := &Catalog{Providers: map[string]ProviderConfig{"bedrock": {Type: "bedrock", Region: "us-east-1"}},
		Models: map[string]*Model{"bedrock/m": {Name: "bedrock/m", Provider: "bedrock", Upstream: "m"}}}
	for _, tc := range []struct {
		name string
		env  map[string]string
		ok   bool
	}{
		{"nothing", nil, false},
		{"access keys", map[string]string{"AWS_ACCESS_KEY_ID": "AKIA"}, true},
		{"a profile", map[string]string{"AWS_PROFILE": "dev"}, true},
		{"inside Lambda", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "fn"}, true},
	} {
		_, ok := NewListing(cat, func(k string) string { return tc.env[k] }).Lookup("bedrock/m")
		if ok != tc.ok {
			t.Errorf("%s: available = %v, want %v", tc.name, ok, tc.ok)
		}
	}
}
