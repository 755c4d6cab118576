package localserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/docs"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/endpoint/public"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
	"github.com/secureai-gateway/gateway/internal/provider/adapters"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/internal/testkit/openapitest"
)

// Every route answers in its surface's envelope: OpenAI's under /v1, classic elsewhere; a wrong
// method is a 405 naming the allowed ones in Allow, an unknown path a 404; all with a request id.
func TestMuxAnswersUnknownRoutesInTheirSurfacesEnvelope(t *testing.T) {
	gw, err := NewGateway(gateway.Deps{Catalog: &catalog.Catalog{Providers: map[string]catalog.ProviderConfig{}, Models: map[string]*catalog.Model{}}, Providers: adapters.Factories(),
		Credential: func(string) string { return "" }, MaxBody: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
		openai       bool
	}{
		{"GET", "/nope", 404, "", false},
		{"DELETE", "/chat/completions", 405, "POST", false},
		{"GET", "/v1/nope", 404, "", true},
		{"POST", "/v1/models", 405, "GET", true},
		{"GET", "/v1/chat/completions", 405, "POST", true},
		{"PUT", "/policy-check", 405, "POST", false},
		{"POST", "/openapi.json", 405, "GET", false},
		// Issue 34 item 10: a path not in canonical form is a 404 in its surface's envelope, never
		// the mux's redirect (an HTML body; for ../ a Location outside the API).
		{"POST", "//v1/chat/completions", 404, "", true},
		{"GET", "/v1/./models", 404, "", true},
		{"GET", "/console/assets/../../../etc/passwd", 404, "", false},
		{"GET", "/v1/../admin/api-keys", 404, "", false},
		{"GET", "/console/assets/%2e%2e", 404, "", false},
		// … and so is a path that only a slash added would match.
		{"GET", "/v1", 404, "", true},
		{"GET", "/receipts", 404, "", false},
	} {
		rec := httptest.NewRecorder()
		openapitest.Handler(t, gw.Mux()).ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.status || rec.Header().Get("Allow") != tc.allow {
			t.Errorf("%s %s: status %d Allow %q, want %d %q", tc.method, tc.path, rec.Code, rec.Header().Get("Allow"), tc.status, tc.allow)
		}
		if !strings.HasPrefix(rec.Header().Get("X-Request-Id"), "req_") {
			t.Errorf("%s %s: X-Request-Id %q", tc.method, tc.path, rec.Header().Get("X-Request-Id"))
		}
		if loc := rec.Header().Get("Location"); loc != "" {
			t.Errorf("%s %s: redirected to %q", tc.method, tc.path, loc)
		}
		var body map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		path := tc.path
		if u, err := url.PathUnescape(path); err == nil {
			path = u // the message names the path as decoded
		}
		if tc.openai {
			e, _ := body["error"].(map[string]any)
			if e == nil || e["type"] != "invalid_request_error" || !strings.Contains(e["message"].(string), path) {
				t.Errorf("%s %s: body %s is not the OpenAI envelope naming the route", tc.method, tc.path, rec.Body)
			}
		} else if body["success"] != false || !strings.Contains(fmt.Sprint(body["message"]), path) {
			t.Errorf("%s %s: body %s is not the classic envelope naming the route", tc.method, tc.path, rec.Body)
		}
	}
}

// GET /openapi.json needs no key and serves docs/openapi.yaml as JSON.
func TestOpenAPIIsServedWithoutAKey(t *testing.T) {
	gw, err := NewGateway(gateway.Deps{Catalog: &catalog.Catalog{Providers: map[string]catalog.ProviderConfig{}, Models: map[string]*catalog.Model{}}, Providers: adapters.Factories(),
		Credential: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	openapitest.Handler(t, gw.Mux()).ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	want, err := docs.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || !bytes.Equal(rec.Body.Bytes(), want) {
		t.Errorf("GET /openapi.json: status %d, Content-Type %q, %d bytes; want 200, application/json, the %d bytes of docs.OpenAPIJSON",
			rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len(), len(want))
	}
}

// The public JWKS refuses another method like every route: a 405 in the classic envelope.
func TestJWKSAnswersOtherMethodsInTheClassicEnvelope(t *testing.T) {
	ks, err := signing.NewKeyset(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.NewSigner(ks)
	if err != nil {
		t.Fatal(err)
	}
	h, err := public.NewJWKS(gateway.Deps{Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/.well-known/jwks.json", nil))
	var body map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &body)
	if rec.Code != 405 || rec.Header().Get("Allow") != "GET" || body["success"] != false {
		t.Errorf("POST: status %d Allow %q body %s, want 405 GET in the classic envelope", rec.Code, rec.Header().Get("Allow"), rec.Body)
	}
}

// GET /usage reads billing and the request limits: a gateway without either has no such route
// (a 404), never a handler that would dereference the missing one.
func TestUsageIsMountedOnlyWithBillingAndLimits(t *testing.T) {
	gw, err := NewGateway(gateway.Deps{Catalog: &catalog.Catalog{Providers: map[string]catalog.ProviderConfig{}, Models: map[string]*catalog.Model{}}, Providers: adapters.Factories(),
		Credential: func(string) string { return "" }, KeyAdmin: &keyadmin.Service{}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	gw.Mux().ServeHTTP(rec, httptest.NewRequest("GET", "/usage", nil))
	if rec.Code != 404 {
		t.Errorf("GET /usage without billing and limits: status %d, want 404", rec.Code)
	}
}

// Issue 34 item 16: GET /openapi.json names the local server's own address first, whatever PORT
// is; without one, the document's (8080).
func TestTheAPIDescriptionNamesTheLocalServersPort(t *testing.T) {
	for _, tc := range []struct{ local, want string }{{"http://127.0.0.1:9090", "http://127.0.0.1:9090"}, {"", "http://127.0.0.1:8080"}} {
		gw, err := NewGateway(gateway.Deps{Catalog: &catalog.Catalog{Providers: map[string]catalog.ProviderConfig{}, Models: map[string]*catalog.Model{}},
			Providers: adapters.Factories(), Credential: func(string) string { return "" }, LocalURL: tc.local})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		gw.Mux().ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
		var doc struct {
			OpenAPI string `json:"openapi"`
			Servers []struct{ URL string }
			Paths   map[string]any
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || rec.Code != 200 {
			t.Fatalf("GET /openapi.json: %d %v", rec.Code, err)
		}
		if len(doc.Servers) < 2 || doc.Servers[0].URL != tc.want || doc.OpenAPI == "" || len(doc.Paths) == 0 {
			t.Errorf("LocalURL %q: servers %+v, want %s first and the rest of the document", tc.local, doc.Servers, tc.want)
		}
	}
}
