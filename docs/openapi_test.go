package docs_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/secureai-gateway/gateway/docs"
)

// The JSON served at GET /openapi.json is the YAML document, and a valid OpenAPI 3.1 one.
func TestOpenAPIJSONIsAValidDocument(t *testing.T) {
	b, err := docs.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	if top["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", top["openapi"])
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v", err)
	}
	if len(doc.Webhooks) == 0 {
		t.Error("no webhooks section")
	}
}
