package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot returns the directory holding go.mod, found by walking up from the
// test's working directory (its package directory).
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return root
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// tool returns the path of an installed test tool, relative to the repo root.
func tool(rel string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, rel)
	if _, err := os.Stat(path); err != nil {
		return "", errors.New(rel + " is missing: run `make test` (or `make test-tools`) to install the test tools")
	}
	return path, nil
}

// Tool returns the path of an installed test tool, relative to the repo root; a missing one fails
// the test, saying how to install it (never a skip: CI installs every tool).
func Tool(t testing.TB, rel string) string {
	t.Helper()
	path, err := tool(rel)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return path
}

// RIE returns the path of the Lambda Runtime Interface Emulator binary.
func RIE(t testing.TB) string {
	t.Helper()
	return Tool(t, ".bin/aws-lambda-rie")
}
