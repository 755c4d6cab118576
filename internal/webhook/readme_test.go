package webhook_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// The README's signature checks, run as written: each accepts a fresh delivery and refuses a
// tampered one and one captured ten minutes earlier (issue 21 item 9).
func TestTheREADMEsVerifiersRunAsWritten(t *testing.T) {
	root := testenv.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := func(lang, start string) string {
		m := regexp.MustCompile("(?s)```" + lang + "\n(" + regexp.QuoteMeta(start) + ".*?)```").FindSubmatch(readme)
		if m == nil {
			t.Fatalf("README has no %s block starting %q", lang, start)
		}
		return string(m[1])
	}
	dir := t.TempDir()
	python := filepath.Join(dir, "verify.py")
	if err := os.WriteFile(python, []byte(block("python", "import hmac")+`
import sys
print(verify(sys.argv[1], sys.argv[2], open(sys.argv[3], "rb").read()))
`), 0o600); err != nil {
		t.Fatal(err)
	}
	goProg := filepath.Join(dir, "verify.go")
	if err := os.WriteFile(goProg, []byte(`package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

`+block("go", "func verify(")+`
func main() {
	body, _ := os.ReadFile(os.Args[3])
	fmt.Println(verify(os.Args[1], os.Args[2], body, time.Now()))
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	goBin := filepath.Join(dir, "verify")
	if out, err := exec.Command("go", "build", "-o", goBin, goProg).CombinedOutput(); err != nil {
		t.Fatalf("the README's Go verifier does not build: %v\n%s", err, out)
	}
	pythonBin := filepath.Join(root, ".venv", "bin", "python")
	if _, err := os.Stat(pythonBin); err != nil {
		t.Fatalf("%s is missing: run make test-tools", pythonBin)
	}

	secret := webhook.NewSecret()
	body := []byte(`{"id":"evt_1","type":"webhook:test","created":"2026-12-01T00:00:00Z","data":{}}`)
	bodyFile := filepath.Join(dir, "body.json")
	if err := os.WriteFile(bodyFile, body, 0o600); err != nil {
		t.Fatal(err)
	}
	header := func(at time.Time, secrets ...string) string {
		if len(secrets) == 0 {
			secrets = []string{secret}
		}
		h, err := webhook.Sign(secrets, "d1", at, body)
		if err != nil {
			t.Fatal(err)
		}
		return h.Get(webhook.HeaderSignature)
	}
	for _, tc := range []struct {
		name, secret, header string
		want                 string
	}{
		{"a fresh delivery", secret, header(time.Now()), "True"},
		{"another secret", webhook.NewSecret(), header(time.Now()), "False"},
		{"captured ten minutes earlier", secret, header(time.Now().Add(-10 * time.Minute)), "False"},
		{"signed with a new secret and this, rotated-out, one", secret, header(time.Now(), webhook.NewSecret(), secret), "True"},
	} {
		for _, run := range []struct{ lang, bin string }{{"python", pythonBin}, {"go", goBin}} {
			args := []string{tc.secret, tc.header, bodyFile}
			if run.lang == "python" {
				args = append([]string{python}, args...)
			}
			out, err := exec.Command(run.bin, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s verifier: %v\n%s", run.lang, err, out)
			}
			if got := strings.TrimSpace(string(out)); !strings.EqualFold(got, tc.want) {
				t.Errorf("%s verifier, %s: %s, want %s", run.lang, tc.name, got, tc.want)
			}
		}
	}
}
