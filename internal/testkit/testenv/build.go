package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// builds memoizes GoBuild within a test binary run under Main, which removes
// the directory at the end; linking a function binary takes seconds.
var builds struct {
	mu   sync.Mutex
	dir  string
	bins map[string]string
}

// GoBuild builds the main package pkg (a path relative to the test's package
// directory, like "./testdata/fn", or an import path) into a file named
// bootstrap, as Lambda's provided runtimes expect, and returns its path. It
// builds with lambda.norpc, as functions are deployed. Under Main each package
// is built once per test binary; otherwise once per test.
func GoBuild(t testing.TB, pkg string) string {
	t.Helper()
	shared.mu.Lock()
	inMain := shared.inMain
	shared.mu.Unlock()
	if !inMain {
		return goBuild(t, pkg, t.TempDir())
	}

	builds.mu.Lock()
	defer builds.mu.Unlock()
	if bin, ok := builds.bins[pkg]; ok {
		return bin
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "testenv-build-")
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		builds.dir, builds.bins = dir, map[string]string{}
	}
	out := filepath.Join(builds.dir, strconv.Itoa(len(builds.bins)))
	bin := goBuild(t, pkg, out)
	builds.bins[pkg] = bin
	return bin
}

func goBuild(t testing.TB, pkg, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testenv: go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

func removeBuilds() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
		builds.dir, builds.bins = "", nil
	}
}
