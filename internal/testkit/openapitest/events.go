package openapitest

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// CheckEvents validates each frame of a stream that method path answered with 200 against the
// document's description of that stream: x-sse-events names the schema of each event's data
// (the Messages and Responses APIs' named events; "*" any other event, such as a provider's own
// passed through), x-sse-data the schema of every data line (Chat Completions' unnamed frames;
// `[DONE]` is the terminator). An event the document does not name, or a frame that does not
// match its schema, fails t.
func CheckEvents(t testing.TB, method, path string, body []byte) {
	t.Helper()
	rt, err := router()
	if err != nil {
		t.Fatal(err)
	}
	route, _, err := rt.FindRoute(httptest.NewRequest(method, "http://gateway"+path, nil))
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %s %s: %v", method, path, err)
	}
	var media *openapi3.MediaType
	if res := route.Operation.Responses.Status(200); res != nil && res.Value != nil {
		media = res.Value.Content.Get("text/event-stream")
	}
	if media == nil {
		t.Fatalf("docs/openapi.yaml: %s %s has no text/event-stream answer", method, path)
	}
	named, _ := media.Extensions["x-sse-events"].(map[string]any)
	data := media.Extensions["x-sse-data"]
	if named == nil && data == nil {
		t.Fatalf("docs/openapi.yaml: %s %s describes its stream's frames in neither x-sse-events nor x-sse-data", method, path)
	}
	for frame := range strings.SplitSeq(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		var event, payload string
		for line := range strings.SplitSeq(frame, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				event = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				payload = v
			}
		}
		if payload == "[DONE]" && event == "" {
			continue
		}
		desc := data
		if event != "" || named != nil {
			if desc = named[event]; desc == nil {
				desc = named["*"]
			}
			if desc == nil {
				t.Errorf("docs/openapi.yaml: %s %s: the stream's event %q is not described (x-sse-events)", method, path, event)
				continue
			}
		}
		schema, err := rt.schemaOf(desc)
		if err != nil {
			t.Fatalf("docs/openapi.yaml: %s %s: %v", method, path, err)
		}
		var v any
		if err := json.Unmarshal([]byte(payload), &v); err != nil {
			t.Errorf("%s %s: frame %q is not JSON: %v", method, path, frame, err)
			continue
		}
		// The document is OpenAPI 3.1: its schemas are JSON Schema 2020-12 (const, type arrays).
		if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("docs/openapi.yaml: %s %s: frame %q does not match the document: %v", method, path, frame, err)
		}
	}
}

// schemaOf resolves a frame's description in an x-sse-* extension: a $ref to a component
// schema, or a oneOf of them.
func (rt docRouter) schemaOf(desc any) (*openapi3.Schema, error) {
	m, _ := desc.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/components/schemas/")
		s := rt.doc.Components.Schemas[name]
		if !found || s == nil || s.Value == nil {
			return nil, fmt.Errorf("%s is no schema of the document", ref)
		}
		return s.Value, nil
	}
	if alts, ok := m["oneOf"].([]any); ok {
		one := &openapi3.Schema{}
		for _, a := range alts {
			s, err := rt.schemaOf(a)
			if err != nil {
				return nil, err
			}
			one.OneOf = append(one.OneOf, openapi3.NewSchemaRef("", s))
		}
		return one, nil
	}
	return nil, fmt.Errorf("a frame's description %v is neither a $ref nor a oneOf of them", desc)
}
