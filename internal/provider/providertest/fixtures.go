package providertest

import (
	"os"
	"strings"
	"testing"
)

// Fixture reads testdata/name of the package under test.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Events splits an SSE fixture into its events, each keeping its terminator sep ("\n\n", or
// "\r\n\r\n" for a provider that frames with CRLF).
func Events(t testing.TB, name, sep string) []string {
	t.Helper()
	var out []string
	for _, e := range strings.SplitAfter(string(Fixture(t, name)), sep) {
		if strings.TrimSpace(e) != "" {
			out = append(out, e)
		}
	}
	return out
}
