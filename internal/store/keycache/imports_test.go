package keycache

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsNoHTTPPackage keeps the cache usable by any edge (the local server, a Lambda, the
// admin service) without pulling in a surface: it decorates an identity.KeyFinder, nothing more.
func TestImportsNoHTTPPackage(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.HasPrefix(imp, "net/http") || strings.HasSuffix(imp, "/httpapi") {
			t.Errorf("keycache imports %s", imp)
		}
	}
}
