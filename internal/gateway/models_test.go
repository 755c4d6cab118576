package gateway_test

import (
	"net/http"
	"testing"

	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
)

// GET /v1/models/{id} answers as OpenAI's does: the model, or a 404 in the OpenAI envelope when
// this key may not use it — with the id's slash escaped or not.
func TestGetOneModel(t *testing.T) {
	g := gatewaykit.ServeFakes(t, "")
	key := g.NewKey(t, `{"name":"m","allowedModels":["fake/ok"]}`)
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/v1/models/fake/ok", 200},
		{"/v1/models/fake%2Fok", 200},
		{"/v1/models/fake/tools", 404}, // exists, not for this key
		{"/v1/models/nope/nope", 404},
	} {
		status, _, body := g.Call(t, "GET", tc.path, key, "")
		if status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.path, status, body.Raw, tc.status)
			continue
		}
		if status == http.StatusOK && (body.Get("id").String() != "fake/ok" || body.Get("object").String() != "model") {
			t.Errorf("%s: %s", tc.path, body.Raw)
		}
		if status == http.StatusNotFound && (body.Get("error.code").String() != "model_not_found" || body.Get("error.type").String() == "") {
			t.Errorf("%s: %s is not the OpenAI envelope", tc.path, body.Raw)
		}
	}
}
