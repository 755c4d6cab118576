package anthropic

import (
	"testing"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/providertest"
)

// What the shared fakes need to know of Anthropic: its credential and how its SSE is framed.

const testKey = "sk-ant-test-secret-key"

func newAdapter(t *testing.T, f *providertest.Server) provider.Provider {
	t.Helper()
	p, err := New(provider.Config{Name: "anthropic", Type: "anthropic", BaseURL: f.URL, APIKey: testKey, Client: f.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// events splits an SSE fixture into its events; Anthropic ends each with a blank line.
func events(t *testing.T, name string) []string { return providertest.Events(t, name, "\n\n") }

func wantErr(t *testing.T, err error, reason chain.Reason, status int, code string) *provider.Error {
	t.Helper()
	return providertest.WantErr(t, err, reason, status, code, testKey)
}
