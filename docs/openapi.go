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

// WithFirstServer returns the JSON document doc with its first server's url set to url (the local
// server's address when PORT is not 8080), the rest unchanged.
func WithFirstServer(doc []byte, url string) ([]byte, error) {
	var d map[string]json.RawMessage
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("docs: the API description: %w", err)
	}
	var servers []map[string]any
	if err := json.Unmarshal(d["servers"], &servers); err != nil || len(servers) == 0 {
		return nil, fmt.Errorf("docs: the API description names no servers")
	}
	servers[0]["url"] = url
	raw, err := json.Marshal(servers)
	if err != nil {
		return nil, err
	}
	d["servers"] = raw
	return json.Marshal(d)
}
