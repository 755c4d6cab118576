package gatewaykit

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/openai"
)

// FakeService is a completion service, with no governance, over OneFake's catalog of models at
// an upstream serving h (stopped when t ends): what a surface's handler runs on in its own
// package's tests, in front of fake providers.
func FakeService(t testing.TB, h http.Handler, models ...string) *completion.Service {
	t.Helper()
	up := httptest.NewServer(h)
	t.Cleanup(up.Close)
	router, err := catalog.NewRouter(OneFake(up.URL+"/v1", models...), map[string]catalog.Factory{"openai": openai.New},
		func(string) string { return "" }, provider.NewHTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	return &completion.Service{Router: router, Engine: chain.Engine{Reserve: 50 * time.Millisecond}, Settings: chain.ProjectSettings}
}

// NotJSON is the error code StrictJSON answers a body that is not JSON with.
const NotJSON = "fuzz_upstream_got_invalid_json"

// StrictJSON refuses, as a real provider does, a request body that is not JSON (the fakes read
// bodies leniently), with an error code no other answer has: a translation that writes a body
// that is not JSON fails where it is tested.
func StrictJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !json.Valid(b) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"We could not parse the JSON body of your request.","type":"invalid_request_error","param":null,"code":"`+NotJSON+`"}}`)
			return
		}
		r.Body, r.ContentLength = io.NopCloser(strings.NewReader(string(b))), int64(len(b))
		next.ServeHTTP(w, r)
	})
}
