package gemini

import (
	"testing"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/providertest"
)

// What the shared fakes need to know of Gemini: its credential and how its SSE is framed.

const testKey = "AIzaSyTest-secret-key"

func newAdapter(t *testing.T, f *providertest.Server) provider.Provider {
	t.Helper()
	p, err := New(provider.Config{Name: "gemini", Type: "gemini", BaseURL: f.URL, APIKey: testKey, Client: f.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// events splits an SSE fixture into its events; Gemini frames with CRLF.
func events(t *testing.T, name string) []string { return providertest.Events(t, name, "\r\n\r\n") }

func wantErr(t *testing.T, err error, reason chain.Reason, status int, code string) *provider.Error {
	t.Helper()
	return providertest.WantErr(t, err, reason, status, code, testKey)
}
