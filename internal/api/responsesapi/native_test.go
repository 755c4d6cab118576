package responsesapi

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/tidwall/gjson"
)

// A passed-through stream interrupted after its first content ends with the gateway's
// response.failed, which must be the provider's response: the same id and created_at as the
// provider's response.created (openai-python refuses a stream whose response changes identity)
// and the next sequence number.
func TestInterruptedPassthroughFailsTheProvidersResponse(t *testing.T) {
	rec := httptest.NewRecorder()
	obj := &object{id: "resp_gateway0000", created: 1, model: "openai/gpt-5", secureai: []byte(`{"served_model":"openai/gpt-5"}`)}
	ev := newEvents(httpapi.StartSSE(rec), obj)
	for _, e := range []string{
		`{"type":"response.created","sequence_number":0,"response":{"id":"resp_provider","object":"response","created_at":1764460800,"status":"in_progress","model":"gpt-5","output":[]}}`,
		`{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel"}`,
	} {
		if err := ev.native([]byte(e)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ev.Fail("the provider stream broke off"); err != nil {
		t.Fatal(err)
	}
	var failed gjson.Result
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && gjson.Get(d, "type").String() == "response.failed" {
			failed = gjson.Parse(d)
		}
	}
	if !failed.Exists() {
		t.Fatalf("no response.failed in\n%s", rec.Body)
	}
	r := failed.Get("response")
	if r.Get("id").String() != "resp_provider" || r.Get("created_at").Int() != 1764460800 || failed.Get("sequence_number").Int() != 2 {
		t.Errorf("response.failed is not the provider's response (id resp_provider, created_at 1764460800, sequence 2): %s", failed.Raw)
	}
	if r.Get("status").String() != "failed" || r.Get("model").String() != "openai/gpt-5" || r.Get("error.message").String() == "" {
		t.Errorf("response.failed: %s", failed.Raw)
	}
}
