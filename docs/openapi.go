// Package docs carries the gateway's API description, docs/openapi.yaml, into the binaries that
// serve it at GET /openapi.json. The YAML is the source (written and reviewed by hand); JSON is
// what clients and generators fetch, converted once per process.
package docs

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"go.yaml.in/yaml/v4"
)

// OpenAPIYAML is docs/openapi.yaml as written.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte

// OpenAPIJSON is the document as JSON, converted on first use and kept.
var OpenAPIJSON = sync.OnceValues(func() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(OpenAPIYAML, &doc); err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: %w", err)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml as JSON: %w", err)
	}
	return out, nil
})
