package httpapi_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/fault"
)

// rendered records what a Table rendered, and renders it as its status only.
type rendered struct {
	count int
	err   error
}

func (rd *rendered) render(w http.ResponseWriter, _ *http.Request, err error) {
	rd.count++
	rd.err = err
	w.WriteHeader(httpapi.Status(fault.From(err)))
}

// A route table answers a wrong method with 405 naming every allowed one, another path with 404,
// and renders a handler's error once; a handler that answers is not rendered at all.
func TestTable(t *testing.T) {
	rd := &rendered{}
	failing := errors.New("boom")
	mux := httpapi.Table(rd.render,
		httpapi.Route{Pattern: "GET /things/{id}", Handle: func(w http.ResponseWriter, r *http.Request) error {
			_, err := w.Write([]byte(r.PathValue("id")))
			return err
		}},
		httpapi.Route{Pattern: "DELETE /things/{id}", Handle: func(http.ResponseWriter, *http.Request) error { return failing }},
	)
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
		kind         fault.Kind
		renders      int
	}{
		{"GET", "/things/a", 200, "", 0, 0},
		{"DELETE", "/things/a", 500, "", fault.Internal, 1},
		{"PUT", "/things/a", 405, "GET, DELETE", fault.MethodNotAllowed, 1},
		{"GET", "/other", 404, "", fault.NotFound, 1},
	} {
		*rd = rendered{}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.status || rec.Header().Get("Allow") != tc.allow || rd.count != tc.renders {
			t.Errorf("%s %s: status %d Allow %q rendered %d times, want %d %q %d", tc.method, tc.path, rec.Code, rec.Header().Get("Allow"), rd.count, tc.status, tc.allow, tc.renders)
		}
		if tc.renders > 0 && fault.KindOf(rd.err) != tc.kind {
			t.Errorf("%s %s: rendered %v, want kind %v", tc.method, tc.path, rd.err, tc.kind)
		}
		if tc.method == "DELETE" && !errors.Is(rd.err, failing) {
			t.Errorf("DELETE: rendered %v, want the handler's own error", rd.err)
		}
	}

}

type nested struct {
	Name  string `json:"name"`
	Inner struct {
		Count int      `json:"count"`
		Tags  []string `json:"tags"`
	} `json:"inner"`
	List []struct {
		ID string `json:"id"`
	} `json:"list"`
}

// DecodeJSON is strict: one JSON object within the limit, nothing after it, no key twice at any
// depth, no field the destination lacks, every value of its field's type — each refusal naming
// what is wrong.
func TestDecodeJSON(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		kind       fault.Kind // 0: decoded
		names      string     // what the message names
	}{
		{"an object", `{"name":"a","inner":{"count":2,"tags":["x"]},"list":[{"id":"1"}]}`, 0, ""},
		{"over the limit", `{"name":"` + strings.Repeat("x", 200) + `"}`, fault.TooLarge, "100 bytes"},
		{"empty", ``, fault.InvalidRequest, "JSON object"},
		{"not an object", `["a"]`, fault.InvalidRequest, "JSON object"},
		{"data after the object", `{"name":"a"} {"name":"b"}`, fault.InvalidRequest, "after"},
		{"a key twice", `{"name":"a","name":"b"}`, fault.InvalidRequest, `"name"`},
		{"a nested key twice", `{"inner":{"count":1,"count":2}}`, fault.InvalidRequest, `"inner.count"`},
		{"a key twice in an array's object", `{"list":[{"id":"1"},{"id":"2","id":"3"}]}`, fault.InvalidRequest, `"list[1].id"`},
		{"an unknown field", `{"nmae":"a"}`, fault.InvalidRequest, `"nmae"`},
		{"an unknown nested field", `{"inner":{"cnt":1}}`, fault.InvalidRequest, `"cnt"`},
		{"a wrong type", `{"inner":{"count":"2"}}`, fault.InvalidRequest, "inner.count must be a JSON number"},
		{"a wrong element type", `{"inner":{"tags":"x"}}`, fault.InvalidRequest, "inner.tags must be a JSON array of strings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dst nested
			r := httptest.NewRequest("POST", "/", strings.NewReader(tc.body))
			err := httpapi.DecodeJSON(httptest.NewRecorder(), r, 100, &dst)
			if tc.kind == 0 {
				if err != nil || dst.Name != "a" || dst.Inner.Count != 2 || dst.List[0].ID != "1" {
					t.Fatalf("decoded %+v, %v", dst, err)
				}
				return
			}
			if fault.KindOf(err) != tc.kind || !strings.Contains(fault.From(err).Message, tc.names) {
				t.Errorf("error %v (kind %v), want kind %v naming %s", err, fault.KindOf(err), tc.kind, tc.names)
			}
		})
	}
}

// A route whose body may be left out takes none, and refuses a wrong one like any other.
func TestDecodeOptionalJSON(t *testing.T) {
	var dst struct {
		N *int `json:"n"`
	}
	if err := httpapi.DecodeOptionalJSON(httptest.NewRecorder(), httptest.NewRequest("POST", "/", nil), 100, &dst); err != nil || dst.N != nil {
		t.Errorf("no body: %v %+v", err, dst)
	}
	err := httpapi.DecodeOptionalJSON(httptest.NewRecorder(), httptest.NewRequest("POST", "/", strings.NewReader(`{"m":1}`)), 100, &dst)
	if fault.KindOf(err) != fault.InvalidRequest || !strings.Contains(err.Error(), `"m"`) {
		t.Errorf("unknown field: %v", err)
	}
}

// Issue 34 item 10: a path that is not in canonical form, or that a ServeMux would redirect, is a
// 404 rendered in the envelope chosen for its cleaned path; every other request is served.
func TestCanonicalAndNoRedirect(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /receipts/{$}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("/console/", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	var renderedFor []string
	renderFor := func(cleaned string) httpapi.Render {
		renderedFor = append(renderedFor, cleaned)
		return (&rendered{}).render
	}
	h := httpapi.Canonical(renderFor, httpapi.NoRedirect(mux, renderFor))
	for _, tc := range []struct {
		path    string
		status  int
		cleaned string // the path the envelope was chosen for; "" when served
	}{
		{"/v1/models", 200, ""},
		{"/receipts/", 200, ""},
		{"/console/x", 418, ""},
		{"//v1/models", 404, "/v1/models"},
		{"/v1/./models", 404, "/v1/models"},
		{"/v1/models/..", 404, "/v1"},
		{"/console/assets/%2e%2e", 404, "/console"},
		{"/console/a/../../etc/passwd", 404, "/etc/passwd"},
		{"/receipts", 404, "/receipts"},
		{"/console", 404, "/console"},
	} {
		renderedFor = nil
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", tc.path, nil))
		got := strings.Join(renderedFor, ",")
		if rec.Code != tc.status || got != tc.cleaned || rec.Header().Get("Location") != "" {
			t.Errorf("GET %s: %d, rendered for %q, Location %q; want %d rendered for %q", tc.path, rec.Code, got, rec.Header().Get("Location"), tc.status, tc.cleaned)
		}
	}
}
