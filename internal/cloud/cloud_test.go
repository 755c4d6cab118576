package cloud

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/httpapi"
)

// With CORS on, a browser reads an answer only if the function itself names the origin: API
// Gateway's CORS setting covers just the preflight of a proxy integration.
func TestCORSOriginOnEveryAnswer(t *testing.T) {
	for _, tt := range []struct{ env, want string }{
		{"'https://app.example.com'", "https://app.example.com"},
		{"''", ""},
		{"", ""},
	} {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv("SECUREAI_CORS_ORIGIN", tt.env)
			t.Setenv("SECUREAI_REQUEST_TIMEOUT", "bad") // the build fails before any AWS call
			render := func(w http.ResponseWriter, r *http.Request, err error) {
				w.WriteHeader(httpapi.Status(fault.From(err)))
			}
			h := Handler(func(*gateway.Gateway) http.Handler { return http.NotFoundHandler() }, render)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", nil))
			if rec.Code != http.StatusInternalServerError {
				t.Fatalf("status %d, want 500 from the failed build", rec.Code)
			}
			if got := rec.Header().Get("Access-Control-Allow-Origin"); got != tt.want {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, tt.want)
			}
		})
	}
}
