package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// SAMTransform returns template.yaml as CloudFormation receives it: transformed by the SAM
// translator the project pins (aws-sam-cli in requirements-test.txt), as JSON, with the given
// parameter values (those left out take their defaults). It runs offline
// (testdata/sam_transform.py): no AWS account, profile or endpoint of the developer's is reached.
// A missing tool is an error saying how to install it.
func SAMTransform(params map[string]string) ([]byte, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	python, err := tool(".venv/bin/python")
	if err != nil {
		return nil, err
	}
	if m, _ := filepath.Glob(filepath.Join(root, ".venv/lib/python*/site-packages/samtranslator")); len(m) == 0 {
		return nil, fmt.Errorf("the SAM translator (samtranslator, from aws-sam-cli in requirements-test.txt) is missing from .venv: run `make test-tools`")
	}
	if params == nil {
		params = map[string]string{}
	}
	key, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd := OfflineCommand(root, python, filepath.Join(root, "internal/testkit/testenv/testdata/sam_transform.py"),
		filepath.Join(root, "template.yaml"), string(key))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("the SAM translator refused template.yaml with %s: %v\n%s", key, err, stderr.String())
	}
	return out, nil
}

// OfflineCommand is a tool run from the repo root with an environment that cannot reach an AWS
// account: no profile, credentials or endpoint of the developer's, no instance metadata.
func OfflineCommand(root string, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "SAM_CLI_TELEMETRY=0", "AWS_REGION=us-east-1", "AWS_DEFAULT_REGION=us-east-1",
		"AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull, "AWS_EC2_METADATA_DISABLED=true")
	return cmd
}
