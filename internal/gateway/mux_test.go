package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/catalog"
)

func TestMuxAnswersUnknownRoutesWithRequestID(t *testing.T) {
	gw, err := New(Deps{Catalog: &catalog.Catalog{Providers: map[string]catalog.ProviderConfig{}, Models: map[string]*catalog.Model{}},
		Credential: func(string) string { return "" }, MaxBody: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, path string }{
		{"GET", "/nope"},
		{"POST", "/v1/models"},
		{"GET", "/v1/chat/completions"},
	} {
		rec := httptest.NewRecorder()
		gw.Mux().ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s %s: status %d, want 404", tc.method, tc.path, rec.Code)
		}
		if !strings.HasPrefix(rec.Header().Get("X-Request-Id"), "req_") {
			t.Errorf("%s %s: X-Request-Id %q", tc.method, tc.path, rec.Header().Get("X-Request-Id"))
		}
		if !strings.Contains(rec.Body.String(), `"success":false`) || !strings.Contains(rec.Body.String(), tc.path) {
			t.Errorf("%s %s: body %s does not name the route", tc.method, tc.path, rec.Body.String())
		}
	}
}
