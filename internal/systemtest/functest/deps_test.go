package functest

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

const module = "github.com/secureai-gateway/gateway"

// localOnly are the local server's packages: the embedded store and the in-process event
// pipeline. A Lambda function that linked them would carry code it can never run.
var localOnly = []string{
	"go.etcd.io/bbolt",
	module + "/internal/store/boltstore",
	module + "/internal/local/localevents",
	module + "/internal/local/localserver",
}

// adapterPackages are the provider adapters and the client only one of them needs.
var adapterPackages = []string{
	module + "/internal/provider/adapters",
	module + "/internal/provider/openai",
	module + "/internal/provider/anthropic",
	module + "/internal/provider/gemini",
	module + "/internal/provider/bedrock",
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime",
}

// callsProviders are the functions that pass the provider adapters (gateway.Deps.Providers);
// servesChat those whose endpoint runs Idempotency-Key requests (the console's playground
// calls the chat surface in process).
var (
	callsProviders = []string{"openai-chat", "classic-chat", "messages", "responses", "policy-check", "console"}
	servesChat     = []string{"openai-chat", "classic-chat", "messages", "responses", "console"}
)

// allFunctions are every functions/* directory, the queue consumers and the schedule's included.
func allFunctions(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Fatal("no functions under functions/")
	}
	return names
}

var update = flag.Bool("update", false, "rewrite testdata/deps/*.txt with each function's dependencies as they are")

// deps lists what ./functions/fn links: the module's own packages and the other modules, one a
// line, sorted.
func deps(t *testing.T, root, fn string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{if .Module}}{{if .Module.Main}}{{.ImportPath}}{{else}}{{.Module.Path}}{{end}}{{end}}{{end}}`, "./functions/"+fn)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./functions/%s: %v", fn, err)
	}
	var list []string
	for _, p := range strings.Fields(string(out)) {
		list = append(list, strings.TrimPrefix(p, module+"/"))
	}
	slices.Sort(list)
	return slices.Compact(list)
}

// Each function links only what it uses (issue 20 item 3): no function links the local server's
// code, only the functions that call providers link the provider adapters, and each function's
// whole dependency set is pinned in testdata/deps/<function>.txt, so a new dependency is a
// reviewed change (`go test ./internal/systemtest/functest -run Dependencies -update` rewrites the files).
func TestEachFunctionsDependenciesArePinned(t *testing.T) {
	root := testenv.RepoRoot(t)
	for _, fn := range allFunctions(t, root) {
		t.Run(fn, func(t *testing.T) {
			got := deps(t, root, fn)
			for _, pkg := range localOnly {
				if slices.Contains(got, strings.TrimPrefix(pkg, module+"/")) {
					t.Errorf("functions/%s links %s, the local server's", fn, pkg)
				}
			}
			for _, pkg := range adapterPackages {
				if linked := slices.Contains(got, strings.TrimPrefix(pkg, module+"/")); linked != slices.Contains(callsProviders, fn) {
					t.Errorf("functions/%s links %s: %v; it calls providers: %v", fn, pkg, linked, slices.Contains(callsProviders, fn))
				}
			}
			golden := filepath.Join("testdata", "deps", fn+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			b, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run the test with -update to write it)", err)
			}
			want := strings.Fields(string(b))
			for _, p := range got {
				if !slices.Contains(want, p) {
					t.Errorf("functions/%s now links %s, not in %s: if it must, run the test with -update and commit the file", fn, p, golden)
				}
			}
			for _, p := range want {
				if !slices.Contains(got, p) {
					t.Errorf("functions/%s no longer links %s: run the test with -update and commit %s", fn, p, golden)
				}
			}
		})
	}
}

// The Idempotency-Key guard is linked only into the functions that serve a chat surface: its
// package is imported wherever the stores are, so this is checked on the built binaries' symbols
// (the linker keeps only the code a function can reach).
func TestOnlyChatFunctionsLinkTheIdempotencyGuard(t *testing.T) {
	root := testenv.RepoRoot(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	slots := make(chan struct{}, 2) // linking takes a core each; the machine is shared
	for _, fn := range allFunctions(t, root) {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			bin := filepath.Join(dir, fn)
			// As deployed, but with the symbol table (-w drops only the debug information).
			build := exec.Command("go", "build", "-tags", "lambda.norpc", "-ldflags=-w", "-o", bin, "./functions/"+fn)
			build.Dir = root
			build.Env = append(os.Environ(), "CGO_ENABLED=0")
			if b, err := build.CombinedOutput(); err != nil {
				t.Errorf("go build ./functions/%s: %v\n%s", fn, err, b)
				return
			}
			out, err := exec.Command("go", "tool", "nm", bin).Output()
			if err != nil {
				t.Errorf("go tool nm %s: %v", fn, err)
				return
			}
			linked := strings.Contains(string(out), "internal/idempotency.(*Guard).Begin")
			if linked != slices.Contains(servesChat, fn) {
				t.Errorf("functions/%s links the Idempotency-Key guard: %v; it serves a chat surface: %v", fn, linked, slices.Contains(servesChat, fn))
			}
		})
	}
	wg.Wait()
}
