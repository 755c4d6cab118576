package functest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// localOnly are the local server's packages: the embedded store and the in-process event
// pipeline. A Lambda function that linked them would carry code it can never run.
var localOnly = []string{
	"go.etcd.io/bbolt",
	"github.com/secureai-gateway/gateway/internal/boltstore",
	"github.com/secureai-gateway/gateway/internal/localevents",
	"github.com/secureai-gateway/gateway/internal/localserver",
}

// No function links the local server's code (issue 20 item 3, first step).
func TestFunctionsLinkNoLocalServerCode(t *testing.T) {
	root := filepath.Join("..", "..")
	dirs, err := os.ReadDir(filepath.Join(root, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no functions/ found")
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		cmd := exec.Command("go", "list", "-deps", "./functions/"+d.Name())
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps ./functions/%s: %v", d.Name(), err)
		}
		deps := strings.Fields(string(out))
		for _, pkg := range localOnly {
			for _, dep := range deps {
				if dep == pkg {
					t.Errorf("functions/%s links %s", d.Name(), pkg)
				}
			}
		}
	}
}
