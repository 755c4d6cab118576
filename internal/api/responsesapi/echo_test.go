package responsesapi

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/tidwall/gjson"
)

// The Response object echoes members of the request as the caller wrote them; a pretty-printed
// request's line breaks must not reach an event's data line, where they would split the event
// and corrupt the JSON every SDK parses.
func TestEchoedMembersKeepEachEventOnOneLine(t *testing.T) {
	req, err := read([]byte("{\"model\":\"m\",\"input\":\"hi\",\"stream\":true,\r\n" +
		"  \"tools\": [\n    {\"type\": \"function\", \"name\": \"f\", \"description\": \"line one\\nline two\",\n     \"parameters\": {\"type\": \"object\"}}\n  ],\n" +
		"  \"metadata\": {\n    \"k\": \"v\"\n  },\n  \"text\": {\"format\": {\"type\": \"text\"}\n  }}"))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	obj := &object{id: "resp_0000", created: 1, model: "m", echo: req.echo, secureai: []byte(`{}`)}
	ev := newEvents(httpapi.StartSSE(rec), obj)
	if err := ev.Start(); err != nil {
		t.Fatal(err)
	}
	if err := ev.Fail("broken"); err != nil {
		t.Fatal(err)
	}
	frames := 0
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "event: ") {
			continue
		}
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok || !gjson.Valid(d) {
			t.Fatalf("a line that is no whole data frame: %q\nstream:\n%s", line, rec.Body)
		}
		frames++
		r := gjson.Get(d, "response")
		if r.Get("tools.0.description").String() != "line one\nline two" || r.Get("metadata.k").String() != "v" {
			t.Errorf("the echo lost the caller's values: %s", d)
		}
	}
	if frames != 3 {
		t.Errorf("%d frames, want created, in_progress and failed", frames)
	}
	whole := obj.appendWhole(nil, []byte(`{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`))
	if strings.ContainsAny(string(whole), "\r\n") || !gjson.ValidBytes(whole) {
		t.Errorf("the whole answer: %s", whole)
	}
}
