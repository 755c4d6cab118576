package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// GoBuild builds the main package pkg (a path relative to the test's package
// directory, like "./testdata/fn", or an import path) into a file named
// bootstrap, as Lambda's provided runtimes expect, and returns its path.
// It builds with lambda.norpc, as functions are deployed.
func GoBuild(t testing.TB, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testenv: go build %s: %v\n%s", pkg, err, b)
	}
	return out
}
