package oaiwire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/secureai-gateway/gateway/internal/api/oaiwire"
)

func TestWriteObject(t *testing.T) {
	cases := []struct {
		name, obj, model, extra, want string
	}{
		{"replace", `{"id":"x","model":"gpt-5-nano","choices":[]}`, "openai/gpt-5-nano", "",
			`{"id":"x","model":"openai/gpt-5-nano","choices":[]}`},
		{"replace-with-extra", `{"id":"x","model":"up","choices":[]}`, "p/m", `{"served_model":"p/m"}`,
			`{"id":"x","model":"p/m","choices":[],"secureai":{"served_model":"p/m"}}`},
		{"replace-null-model", `{"model":null,"a":1}`, "p/m", "", `{"model":"p/m","a":1}`},
		{"insert-when-missing", `{"id":"x"}`, "p/m", "", `{"id":"x","model":"p/m"}`},
		{"insert-with-extra", `{"id":"x"}`, "p/m", `{"k":1}`, `{"id":"x","model":"p/m","secureai":{"k":1}}`},
		{"empty-object", `{}`, "p/m", "", `{"model":"p/m"}`},
		{"empty-object-with-extra", `{}`, "p/m", `{"k":1}`, `{"model":"p/m","secureai":{"k":1}}`},
		{"empty-object-with-space", "{ \n}", "p/m", "", "{ \n\"model\":\"p/m\"}"},
		{"nested-model-untouched", `{"choices":[{"model":"inner"}]}`, "p/m", "", `{"choices":[{"model":"inner"}],"model":"p/m"}`},
		{"model-needs-escaping", `{"model":"x"}`, `we"ird\name`, "", `{"model":"we\"ird\\name"}`},
		{"unicode-model", `{"model":"x"}`, "p/模型", "", `{"model":"p/模型"}`},
		{"trailing-newline-kept", "{\"model\":\"x\"}\n", "p/m", "", "{\"model\":\"p/m\"}\n"},
		{"braces-in-strings", `{"content":"}{","model":"x","z":"}"}`, "p/m", `{"k":1}`, `{"content":"}{","model":"p/m","z":"}","secureai":{"k":1}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := oaiwire.WriteObject(&buf, []byte(tc.obj), tc.model, "secureai", []byte(tc.extra)); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tc.want {
				t.Errorf("got  %s\nwant %s", buf.String(), tc.want)
			}
			if n := oaiwire.Find([]byte(tc.obj)).Len(tc.model, "secureai", []byte(tc.extra)); n != len(tc.want) {
				t.Errorf("Len = %d, want %d", n, len(tc.want))
			}
			var got, want any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("output is not JSON: %v", err)
			}
			_ = json.Unmarshal([]byte(tc.want), &want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded differently: %v vs %v", got, want)
			}
		})
	}
}

func TestWriteObjectDoesNotModifyInput(t *testing.T) {
	obj := []byte(`{"id":"x","model":"up"}`)
	orig := bytes.Clone(obj)
	var buf bytes.Buffer
	_ = oaiwire.WriteObject(&buf, obj, "a-much-longer/model-name", "secureai", []byte(`{"k":1}`))
	if !bytes.Equal(obj, orig) {
		t.Errorf("input changed to %s", obj)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n == 0 {
		return 0, errors.New("gone")
	}
	w.n--
	return len(p), nil
}

func TestWriteObjectReportsWriteErrors(t *testing.T) {
	for n := range 3 {
		if err := oaiwire.WriteObject(&failWriter{n: n}, []byte(`{"model":"x","a":1}`), "p/m", "secureai", []byte(`{}`)); err == nil {
			t.Errorf("write %d failing: no error reported", n)
		}
	}
}
